/* The godot runtime's fork server: a trusted GDNative library that lets the engine fork.
 *
 * Why: a warm game.godot check is ~97% the engine's start (registering 627 classes, building
 * the default theme: ~0.10 s of CPU that no flag skips; docs/godot.md). With this library the
 * engine is initialised once, its main-loop script (the server) waits for jobs inside
 * _initialize, before the first frame and before any model file exists, and forks one child per
 * job. The child jails itself (below) and only then returns into GDScript, where the trusted
 * harness runs the job exactly as in a fresh engine. The parent never runs model code: it only
 * forks and waits, and it shares nothing writable with a child (separate process, copy-on-write
 * memory, fds 0/1/2 of the child replaced by the job's, every other fd closed).
 *
 * Built at RUNTIME BUILD TIME (setup.sh, with gcc inside the runtime's root filesystem), so the
 * .so is a file of the read-only root that exists before any job: the jail's read rule (only
 * files that existed when the jail was made may be read in the writable folders) still keeps a
 * library the model writes from ever loading.
 *
 * GDNative ABI (Godot 3.2, core API 1.x): own minimal declarations, learnt from godot-headers
 * (gdnative.h, gdnative_api_struct.gen.h of godot-3.2.3-stable): the core API struct is a
 * header then 744 function pointers in a fixed order; only the few used are named here by
 * their index. Procedures are called from GDScript with
 * GDNative.call_native("standard_varcall", name, [args]): godot_variant name(godot_array *).
 *
 * Linked with -nostdlib: the library has no DT_NEEDED entry. Its libc calls still resolve at
 * load time, from the engine's global scope, but call_native looks procedures up with
 * dlsym(handle), which searches only the library and its dependencies: through this library's
 * handle no script can reach a libc function (linked against libc, dlsym(handle, "system")
 * finds libc's, checked with a dlopen test). Its own procedures are the only ones exported,
 * and vf_enter seals them: in a child, vf_fork, vf_next and vf_enter refuse (a model that
 * found the GDNative object must not fork the checked engine: copies of one world could
 * each try something else and only the lucky one report), leaving vf_exit (exiting
 * early only loses the harness's proof), vf_wait, vf_cpu_us and vf_threads.
 *
 * The child's jail (vf_enter) is the one _jail.py gives a fresh engine, in C because the child
 * cannot exec: no_new_privs; Landlock (read everywhere but /proc, in the work dir, /tmp and
 * /dev/shm only what exists now; write only there; execute only the engine and its ELF
 * interpreter; signals scoped to the child's own domain, so it cannot signal the server or any
 * other job); seccomp (ptrace, process_vm_readv/writev fail with EPERM). Any failure exits the
 * child with 97 (NO_JAIL) before GDScript runs again.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* -- the GDNative ABI, minimal ----------------------------------------------------------- */

typedef struct { uint8_t opaque[16 + sizeof(int64_t)]; } gd_variant;
typedef struct { uint8_t opaque[sizeof(void *)]; } gd_string;
typedef struct { uint8_t opaque[sizeof(void *)]; } gd_char_string;
typedef struct { uint8_t opaque[sizeof(void *)]; } gd_array;

struct gd_core_api {
    unsigned int type;
    unsigned int major, minor;
    const void *next;
    unsigned int num_extensions;
    const void **extensions;
    void *fn[744];
};

struct gd_init_options {
    bool in_editor;
    uint64_t core_api_hash, editor_api_hash, no_api_hash;
    void *report_version_mismatch, *report_loading_error, *library;
    const struct gd_core_api *api;
    const void *active_library_path;
};

enum { /* indexes into gd_core_api.fn (godot-3.2.3-stable gdnative_api_struct.gen.h) */
    F_ARRAY_GET = 333,
    F_ARRAY_SIZE = 356,
    F_VARIANT_NEW_INT = 512,
    F_VARIANT_AS_INT = 539,
    F_VARIANT_AS_STRING = 541,
    F_VARIANT_DESTROY = 570,
    F_CHAR_STRING_GET_DATA = 572,
    F_CHAR_STRING_DESTROY = 573,
    F_STRING_UTF8 = 678,
    F_STRING_DESTROY = 721,
};

static const struct gd_core_api *api;
static struct rusage last_usage;
static int sealed; /* set by vf_enter in a child: no more fork, next or enter */

#define CALL(index, type) ((type)api->fn[index])

static gd_variant make_int(int64_t value) {
    gd_variant out;
    CALL(F_VARIANT_NEW_INT, void (*)(gd_variant *, int64_t))(&out, value);
    return out;
}

static int arg_count(gd_array *args) {
    return CALL(F_ARRAY_SIZE, int (*)(const gd_array *))(args);
}

static int64_t arg_int(gd_array *args, int index) {
    if (arg_count(args) <= index) return -1;
    gd_variant v = CALL(F_ARRAY_GET, gd_variant (*)(const gd_array *, int))(args, index);
    int64_t out = CALL(F_VARIANT_AS_INT, int64_t (*)(const gd_variant *))(&v);
    CALL(F_VARIANT_DESTROY, void (*)(gd_variant *))(&v);
    return out;
}

/* The argument as UTF-8 in buf (truncated: paths here are the server's own, short). */
static void arg_text(gd_array *args, int index, char *buf, size_t size) {
    buf[0] = 0;
    if (arg_count(args) <= index) return;
    gd_variant v = CALL(F_ARRAY_GET, gd_variant (*)(const gd_array *, int))(args, index);
    gd_string s = CALL(F_VARIANT_AS_STRING, gd_string (*)(const gd_variant *))(&v);
    gd_char_string c = CALL(F_STRING_UTF8, gd_char_string (*)(const gd_string *))(&s);
    const char *data = CALL(F_CHAR_STRING_GET_DATA, const char *(*)(const gd_char_string *))(&c);
    snprintf(buf, size, "%s", data ? data : "");
    CALL(F_CHAR_STRING_DESTROY, void (*)(gd_char_string *))(&c);
    CALL(F_STRING_DESTROY, void (*)(gd_string *))(&s);
    CALL(F_VARIANT_DESTROY, void (*)(gd_variant *))(&v);
}

void godot_gdnative_init(struct gd_init_options *options) { api = options->api; }

void godot_gdnative_terminate(void *options) { (void)options; }

/* -- procedures ------------------------------------------------------------------------- */

/* Threads of this process now (fork copies only the calling one). */
gd_variant vf_threads(gd_array *args) {
    (void)args;
    int count = 0;
    DIR *dir = opendir("/proc/self/task");
    if (dir) {
        struct dirent *e;
        while ((e = readdir(dir)))
            if (e->d_name[0] != '.') count++;
        closedir(dir);
    }
    return make_int(count);
}

/* fork(): the child's pid in the parent, 0 in the child, -errno on failure. Buffered output
 * is flushed first, so no line of the server is printed twice. */
gd_variant vf_fork(gd_array *args) {
    (void)args;
    if (sealed) return make_int(-EPERM);
    fflush(NULL);
    pid_t pid = fork();
    return make_int(pid < 0 ? -errno : pid);
}

/* The next request on stdin: a line holding a job number (>= 0); -1 at the end. */
gd_variant vf_next(gd_array *args) {
    (void)args;
    if (sealed) return make_int(-1);
    char line[64];
    size_t n = 0;
    while (n + 1 < sizeof line) {
        ssize_t got = read(0, line + n, 1);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return make_int(-1);
        if (line[n] == '\n') break;
        n++;
    }
    line[n] = 0;
    char *end;
    long job = strtol(line, &end, 10);
    return make_int(end == line || *end || job < 0 ? -1 : job);
}

/* wait4(pid): its exit status, -signal when killed (as the sandbox runner reports it), or
 * -1000 - errno on failure; its CPU time is
 * kept for vf_cpu_us. */
gd_variant vf_wait(gd_array *args) {
    pid_t pid = (pid_t)arg_int(args, 0);
    int status = 0;
    pid_t got;
    do {
        got = wait4(pid, &status, 0, &last_usage);
    } while (got < 0 && errno == EINTR);
    if (got < 0) return make_int(-1000 - errno);
    if (WIFSIGNALED(status)) return make_int(-WTERMSIG(status));
    return make_int(WEXITSTATUS(status));
}

/* The user+system CPU time of the last child waited for, in microseconds. */
gd_variant vf_cpu_us(gd_array *args) {
    (void)args;
    int64_t us = (int64_t)last_usage.ru_utime.tv_sec * 1000000 + last_usage.ru_utime.tv_usec +
                 (int64_t)last_usage.ru_stime.tv_sec * 1000000 + last_usage.ru_stime.tv_usec;
    return make_int(us);
}

/* _exit(code) after flushing stdio: a child's end once the harness is done, without the
 * engine's teardown (~30 ms of CPU freeing what the process is about to drop anyway). */
gd_variant vf_exit(gd_array *args) {
    int code = (int)arg_int(args, 0);
    fflush(NULL);
    _exit(code);
}

/* -- the child's jail ------------------------------------------------------------------- */

#define NO_JAIL 97
#define LL_EXECUTE (1ULL << 0)
#define LL_WRITE_FILE (1ULL << 1)
#define LL_READ_FILE (1ULL << 2)
#define LL_READ_DIR (1ULL << 3)
#define LL_TRUNCATE (1ULL << 14)
#define LL_IOCTL_DEV (1ULL << 15)
#define LL_FILE_RIGHTS (LL_EXECUTE | LL_WRITE_FILE | LL_READ_FILE | LL_TRUNCATE | LL_IOCTL_DEV)
#define LL_SCOPE_SIGNAL (1ULL << 1)

struct ll_ruleset_attr {
    uint64_t handled_access_fs, handled_access_net, scoped;
};
struct __attribute__((packed)) ll_path_beneath {
    uint64_t allowed_access;
    int32_t parent_fd;
};

static void jail_fail(const char *what) {
    dprintf(2, "jail: %s failed: %s\n", what, strerror(errno));
    _exit(NO_JAIL);
}

static uint64_t handled;
static int ruleset = -1;

static void allow(const char *path, uint64_t access) {
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return; /* a path this root does not have */
    struct stat st;
    if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) access &= LL_FILE_RIGHTS;
    struct ll_path_beneath rule = {access & handled, fd};
    if (syscall(445, ruleset, 1, &rule, 0) != 0) jail_fail(path);
    close(fd);
}

static bool is_dir(const char *path, bool follow) {
    struct stat st;
    return (follow ? stat(path, &st) : lstat(path, &st)) == 0 && S_ISDIR(st.st_mode);
}

static bool is_link(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

#define LIBRARY_DIR "/opt/verifiers/godot"
static const char *special[4]; /* the writable folders, then this library's (never read) */

/* Read rights on everything under folder but /proc and the special folders (their ancestors
 * get READ_DIR only: rights are inherited down the tree). This library's folder is unreadable
 * too: the child keeps the library loaded (sealed, libc-free), and nothing else of it or
 * beside it needs reading. */
static void allow_read(const char *folder) {
    DIR *dir = opendir(folder);
    if (!dir) return;
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", strcmp(folder, "/") ? folder : "", e->d_name);
        if (!strcmp(path, "/proc") || (strcmp(folder, "/") && is_link(path))) continue;
        bool skip = false, above = false;
        size_t n = strlen(path);
        for (int i = 0; i < 4; i++) {
            if (!strcmp(special[i], path)) skip = true;
            if (!strncmp(special[i], path, n) && special[i][n] == '/') above = true;
        }
        if (skip) continue;
        if (above && !is_link(path)) {
            allow(path, LL_READ_DIR);
            allow_read(path);
        } else {
            allow(path, LL_READ_FILE | LL_READ_DIR);
        }
    }
    closedir(dir);
}

/* Every file and folder under the work dir now: the only ones there that may be read. */
static void allow_existing(const char *folder, int depth) {
    allow(folder, LL_READ_DIR);
    DIR *dir = opendir(folder);
    if (!dir || depth > 16) {
        if (dir) closedir(dir);
        return;
    }
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", folder, e->d_name);
        if (is_dir(path, false))
            allow_existing(path, depth + 1);
        else
            allow(path, LL_READ_FILE | LL_READ_DIR);
    }
    closedir(dir);
}

static void landlock(const char *work, const char *engine) {
    long abi = syscall(444, NULL, 0, 1);
    if (abi < 1) jail_fail("landlock (kernel support)");
    int count = 13 + (abi >= 2) + (abi >= 3);
    handled = 0;
    for (int i = 0; i < count; i++) handled |= 1ULL << i;
    if (abi >= 5) handled |= LL_IOCTL_DEV;
    struct ll_ruleset_attr attr = {handled, 0, abi >= 6 ? LL_SCOPE_SIGNAL : 0};
    ruleset = (int)syscall(444, &attr, abi >= 6 ? sizeof attr : sizeof(uint64_t), 0);
    if (ruleset < 0) jail_fail("landlock_create_ruleset");
    special[0] = work;
    special[1] = "/tmp";
    special[2] = "/dev/shm";
    special[3] = LIBRARY_DIR;
    allow_read("/");
    allow_existing(work, 0);
    uint64_t write = handled & ~LL_EXECUTE & ~LL_IOCTL_DEV & ~LL_READ_FILE;
    for (int i = 0; i < 3; i++) allow(special[i], write);
    allow("/dev/null", LL_READ_FILE | LL_READ_DIR | LL_WRITE_FILE | LL_TRUNCATE);
    char real[4096];
    if (realpath(engine, real)) allow(real, LL_EXECUTE | LL_READ_FILE);
    const char *libs[] = {"/lib", "/lib64", "/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu"};
    for (size_t i = 0; i < sizeof libs / sizeof *libs; i++) {
        DIR *dir = opendir(libs[i]);
        if (!dir) continue;
        struct dirent *e;
        while ((e = readdir(dir))) {
            if (strncmp(e->d_name, "ld-linux", 8)) continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", libs[i], e->d_name);
            if (realpath(path, real)) allow(real, LL_EXECUTE | LL_READ_FILE);
        }
        closedir(dir);
    }
    if (syscall(446, ruleset, 0) != 0) jail_fail("landlock_restrict_self");
    close(ruleset);
}

static void seccomp(void) {
#if defined(__x86_64__)
    const uint32_t arch = 0xC000003E, denied[] = {101, 310, 311};
#elif defined(__aarch64__)
    const uint32_t arch = 0xC00000B7, denied[] = {117, 270, 271};
#else
    errno = ENOSYS;
    jail_fail("seccomp (no syscall table for this machine)");
#endif
    struct sock_filter prog[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, denied[0], 3, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, denied[1], 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, denied[2], 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    };
    struct sock_fprog fprog = {sizeof prog / sizeof *prog, prog};
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) != 0) jail_fail("seccomp filter");
}

/* This process's mapped address space, in bytes (0 when unknown). */
static int64_t vm_size(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int64_t kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmSize:", 7)) kb = strtoll(line + 7, NULL, 10);
    if (f) fclose(f);
    return kb * 1024;
}

/* In a forked child, before any model file is read: [work dir, engine binary, stdout path,
 * stderr path, memory MB]. The child gets its own session, dies with the server, has
 * /dev/null as stdin (never the server's control channel), the job's output files as
 * stdout/stderr and no other fd, an address-space limit of what the engine already maps
 * plus the job's memory, then the jail. Returns 0; exits NO_JAIL when any step fails. */
gd_variant vf_enter(gd_array *args) {
    if (sealed) return make_int(-EPERM);
    sealed = 1;
    char work[4096], engine[4096], out[4096], err[4096];
    arg_text(args, 0, work, sizeof work);
    arg_text(args, 1, engine, sizeof engine);
    arg_text(args, 2, out, sizeof out);
    arg_text(args, 3, err, sizeof err);
    int64_t memory_mb = arg_int(args, 4);
    if (setsid() < 0) jail_fail("setsid");
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) jail_fail("pdeathsig");
    int in = open("/dev/null", O_RDONLY);
    int o = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
    int e = open(err, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
    if (in < 0 || o < 0 || e < 0) jail_fail("the job's stdin/stdout/stderr");
    fflush(NULL);
    if (dup2(in, 0) < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0) jail_fail("dup2");
    if (syscall(SYS_close_range, 3, ~0U, 0) != 0) jail_fail("close_range");
    if (chdir(work) != 0) jail_fail("chdir");
    if (memory_mb > 0) {
        struct rlimit cap;
        cap.rlim_cur = cap.rlim_max = (rlim_t)(vm_size() + memory_mb * 1024 * 1024);
        if (setrlimit(RLIMIT_AS, &cap) != 0) jail_fail("RLIMIT_AS");
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) jail_fail("no_new_privs");
    landlock(work, engine);
    seccomp();
    return make_int(0);
}
