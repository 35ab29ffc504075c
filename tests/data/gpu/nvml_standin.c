/* A stand-in libnvidia-ml.so.1 for machines without a GPU, compiled by the tests with the system cc.
 *
 * Driven by files in the folder holding the compiled library (the same layout as the nvidia-smi stand-in):
 *   devices        one line per device: "<index> <memory MiB> <utilisation %>"
 *   apps/<pid>     "<device index> <MiB>": process <pid> holds that much on that device while it lives
 *   nvml.calls     every call is appended here (a test proves the watch used NVML, not nvidia-smi)
 * Exports the NVML calls frontdesk makes, with NVML's signatures and return codes (0 success, 1 uninitialised,
 * 2 invalid argument, 7 insufficient size). Handles are index + 1.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct { unsigned long long total, free, used; } nvml_memory;
typedef struct { unsigned int gpu, memory; } nvml_utilization;
typedef struct { unsigned int pid; unsigned long long used; unsigned int gi, ci; } nvml_process;

static char dir[3800];
static int ready;

static void log_call(const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/nvml.calls", dir);
    FILE *f = fopen(path, "a");
    if (f) { fprintf(f, "%s\n", name); fclose(f); }
}

static int find_dir(void) {
    Dl_info info;
    if (!dladdr((void *)find_dir, &info) || !info.dli_fname) return -1;
    strncpy(dir, info.dli_fname, sizeof dir - 1);
    char *slash = strrchr(dir, '/');
    if (!slash) return -1;
    *slash = 0;
    return 0;
}

static int device(unsigned index, unsigned *mib, unsigned *util) {
    char path[4096];
    snprintf(path, sizeof path, "%s/devices", dir);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    unsigned i, m, u;
    int found = -1;
    while (fscanf(f, "%u %u %u", &i, &m, &u) == 3) {
        if (i == index) { *mib = m; *util = u; found = 0; break; }
    }
    fclose(f);
    return found;
}

/* Processes on `index` (all counted, the first `cap` written to `out`); *sum gets their MiB. */
static unsigned apps(unsigned index, nvml_process *out, unsigned cap, unsigned long long *sum) {
    char path[4096];
    snprintf(path, sizeof path, "%s/apps", dir);
    DIR *d = opendir(path);
    unsigned n = 0;
    *sum = 0;
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        unsigned long pid = strtoul(e->d_name, &end, 10);
        if (!e->d_name[0] || *end) continue;
        char proc[64];
        snprintf(proc, sizeof proc, "/proc/%lu", pid);
        if (access(proc, F_OK)) continue; /* like the driver: live processes only */
        char file[4400];
        snprintf(file, sizeof file, "%s/%s", path, e->d_name);
        FILE *f = fopen(file, "r");
        unsigned i;
        unsigned long long mib;
        int ok = f && fscanf(f, "%u %llu", &i, &mib) == 2;
        if (f) fclose(f);
        if (!ok || i != index) continue;
        if (n < cap) { out[n].pid = (unsigned)pid; out[n].used = mib << 20; out[n].gi = out[n].ci = 0; }
        *sum += mib;
        n++;
    }
    closedir(d);
    return n;
}

int nvmlInit_v2(void) {
    if (find_dir()) return 1;
    ready = 1;
    log_call("nvmlInit_v2");
    return 0;
}

int nvmlShutdown(void) { ready = 0; return 0; }

int nvmlDeviceGetCount_v2(unsigned *count) {
    unsigned mib, util, n = 0;
    if (!ready) return 1;
    log_call("nvmlDeviceGetCount_v2");
    while (n < 64 && device(n, &mib, &util) == 0) n++;
    *count = n;
    return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned index, void **handle) {
    unsigned mib, util;
    if (!ready) return 1;
    if (device(index, &mib, &util)) return 2;
    *handle = (void *)(unsigned long)(index + 1);
    return 0;
}

int nvmlDeviceGetMemoryInfo(void *handle, nvml_memory *memory) {
    unsigned index = (unsigned)(unsigned long)handle - 1, mib, util;
    unsigned long long used;
    if (!ready) return 1;
    if (device(index, &mib, &util)) return 2;
    log_call("nvmlDeviceGetMemoryInfo");
    apps(index, NULL, 0, &used);
    memory->total = (unsigned long long)mib << 20;
    memory->used = used << 20;
    memory->free = memory->total > memory->used ? memory->total - memory->used : 0;
    return 0;
}

int nvmlDeviceGetUtilizationRates(void *handle, nvml_utilization *rates) {
    unsigned index = (unsigned)(unsigned long)handle - 1, mib, util;
    if (!ready) return 1;
    if (device(index, &mib, &util)) return 2;
    rates->gpu = util;
    rates->memory = 0;
    return 0;
}

int nvmlDeviceGetComputeRunningProcesses_v3(void *handle, unsigned *count, nvml_process *infos) {
    unsigned index = (unsigned)(unsigned long)handle - 1, mib, util;
    unsigned long long sum;
    if (!ready) return 1;
    if (device(index, &mib, &util) || !count) return 2;
    log_call("nvmlDeviceGetComputeRunningProcesses_v3");
    unsigned n = apps(index, infos, infos ? *count : 0, &sum);
    if (n > *count) { *count = n; return 7; }
    *count = n;
    return 0;
}
