# Trusted build artifacts of the languages runtime, made once per runtime build (the
# [runtime].setup script; see sandbox/_runtimes.py): jobs find them in the read-only root, so
# no sample recompiles them and no sample can change them.
#
# 1. <bits/stdc++.h> precompiled next to the header, where g++ looks for it: a program whose
#    first line includes it (most competitive C++) skips parsing the whole standard library
#    (2-10x faster compiles). g++ uses a .gch only when the compile's options match the ones
#    below (the toolchain's, _languages.py); any other compile silently parses the header.
# 2. The C++ call harness's fixed part (verifiers_call.h: every standard header + the record
#    codec), precompiled: a sample's harness compiles only its case literals and the candidate.
set -eu
flags="-std=gnu++17 -O2"
bits=/usr/include/x86_64-linux-gnu/c++/12/bits
test -f "$bits/stdc++.h"
g++ $flags -x c++-header "$bits/stdc++.h" -o "$bits/stdc++.h.gch"
mkdir -p /opt/verifiers/cpp
cp /tmp/runtime/verifiers_call.h /opt/verifiers/cpp/verifiers_call.h
g++ $flags -x c++-header /opt/verifiers/cpp/verifiers_call.h -o /opt/verifiers/cpp/verifiers_call.h.gch
chmod -R a+rX,go-w /opt/verifiers "$bits/stdc++.h.gch"
