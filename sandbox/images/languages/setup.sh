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

# 3. TypeScript (npm, pinned in runtime.toml, unpacked under /opt/npm/node_modules): the compiler
#    driver tsc.js and its start-up snapshot (tsc.js says why: ~2 s of CPU to ~0.3 s a check).
#    The snapshot is checked here against the plain path: same verdicts, or the build fails.
ts=/opt/verifiers/ts
mkdir -p "$ts"
cp /tmp/runtime/tsc.js "$ts/tsc.js"
(cd /tmp && node --snapshot-blob "$ts/tsc.blob" --build-snapshot "$ts/tsc.js" 2>&1 | grep -v "not yet supported in user snapshots\|trace-warnings" || true)
test -s "$ts/tsc.blob"
printf 'const n: number = Number(process.argv.length);\nconsole.log(n);\n' > /tmp/ts-good.ts
printf 'const n: number = "x";\nconsole.log(n);\n' > /tmp/ts-bad.ts
for how in "--snapshot-blob $ts/tsc.blob" ""; do
    node $how "$ts/tsc.js" check /tmp/ts-good.ts /tmp/ts-good.js
    test -s /tmp/ts-good.js
    if node $how "$ts/tsc.js" check /tmp/ts-bad.ts /tmp/ts-bad.js 2>/tmp/ts-bad.err; then exit 1; fi
    grep -q "ts-bad.ts(1,7): error TS2322" /tmp/ts-bad.err
    test ! -e /tmp/ts-bad.js
    rm -f /tmp/ts-good.js /tmp/ts-bad.err
done
rm -f /tmp/ts-good.ts /tmp/ts-bad.ts

# 4. javac's classes in an AppCDS archive (javac is a Java program: ~1.0 s to ~0.65 s of CPU
#    for a small file). Made by one javac run that archives what it loaded; the toolchain's
#    javac passes -XX:SharedArchiveFile (a JVM that cannot map it loads the classes itself).
java_dir=/opt/verifiers/java
mkdir -p "$java_dir" /tmp/cds/b
printf 'import java.util.*;\nimport java.io.*;\npublic class Main {\n  public static void main(String[] a) throws IOException {\n    BufferedReader r = new BufferedReader(new InputStreamReader(System.in));\n    List<Long> l = new ArrayList<>();\n    for (String s : r.readLine().trim().split(" ")) l.add(Long.parseLong(s));\n    System.out.println(l.stream().mapToLong(x -> x).sum());\n  }\n}\n' > /tmp/cds/Main.java
javac -J-Xshare:auto -J-XX:TieredStopAtLevel=1 -J-XX:+UseSerialGC -J-XX:ArchiveClassesAtExit="$java_dir/javac.jsa" \
    -encoding UTF-8 -d /tmp/cds/b /tmp/cds/Main.java
test -s "$java_dir/javac.jsa"
rm -rf /tmp/cds
chmod -R a+rX,go-w /opt/verifiers
