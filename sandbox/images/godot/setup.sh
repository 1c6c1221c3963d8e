# Trusted build artifact of the godot runtime, made once per runtime build (the [runtime].setup
# script; see sandbox/_runtimes.py): the fork server's GDNative library (forkserver.c says what
# it is and why), compiled here so that it is a file of the read-only root that exists before
# any job starts. The jail's read rule (in the work dir, /tmp and /dev/shm only files that
# existed when the jail was made) keeps any library a model writes from loading; this one is
# not in those folders, and no job can change it.
set -eu
mkdir -p /opt/verifiers/godot
# -nostdlib: no DT_NEEDED on libc, so dlsym on the library's handle finds nothing of libc's
# (forkserver.c says why); its libc calls resolve from the engine's global scope.
gcc -O2 -Wall -Wextra -Werror -shared -fPIC -nostdlib -o /opt/verifiers/godot/libvfork.so /tmp/runtime/forkserver.c
chmod -R a+rX,go-w /opt/verifiers
test -s /opt/verifiers/godot/libvfork.so
readelf -d /opt/verifiers/godot/libvfork.so > /tmp/vfork.dyn
if grep -q NEEDED /tmp/vfork.dyn; then exit 1; fi
rm -f /tmp/vfork.dyn
