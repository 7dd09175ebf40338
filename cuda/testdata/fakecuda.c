// fakecuda.c: a stand-in for libcuda.so.1 for the tests that run without a
// GPU (TestFakeDriver builds it with the system C compiler). It implements
// the driver functions package cuda binds, with "device memory" in host
// memory and kernels that do nothing, so that the Go side (binding,
// argument passing, device checks, memory accounting, upload, caches, the
// launch sequence of a Step) runs end to end. It also checks what a real
// driver would refuse: unknown handles, empty or oversized launch shapes,
// too much shared memory, copies outside an allocation.
//
// FAKECUDA_DEVICES (default 1) and FAKECUDA_MEM (bytes, default 1 GiB) set
// what the devices report; cuMemAlloc fails beyond FAKECUDA_MEM.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long dptr;

enum { OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, INVALID_DEVICE = 101, NOT_FOUND = 500 };

#define MAXA 4096
static struct { dptr p; size_t n; } allocs[MAXA];
static size_t used, total = 1ull << 30;
static int devices = 1;
static long launches, bad_launches, live;
static char last_kernel[128];

long fakecuda_launches(void) { return launches; }
long fakecuda_bad_launches(void) { return bad_launches; }
long fakecuda_live_allocs(void) { return live; }
const char *fakecuda_last_kernel(void) { return last_kernel; }

// inside reports whether [p, p+n) lies in one allocation.
static int inside(dptr p, size_t n) {
    for (int i = 0; i < MAXA; i++)
        if (allocs[i].p && p >= allocs[i].p && p + n <= allocs[i].p + allocs[i].n) return 1;
    return 0;
}

int cuInit(unsigned flags) {
    const char *d = getenv("FAKECUDA_DEVICES"), *m = getenv("FAKECUDA_MEM");
    devices = d ? atoi(d) : 1;
    total = m ? strtoull(m, 0, 10) : 1ull << 30;
    return flags == 0 ? OK : INVALID_VALUE;
}
int cuDriverGetVersion(int *v) { *v = 12000; return OK; }
int cuDeviceGetCount(int *n) { *n = devices; return OK; }
int cuDeviceGet(int *d, int i) { if (i < 0 || i >= devices) return INVALID_DEVICE; *d = i; return OK; }
int cuDeviceGetName(char *s, int n, int d) { strncpy(s, "Fake GPU", n); return d < devices ? OK : INVALID_DEVICE; }
int cuDeviceGetAttribute(int *v, int attr, int d) {
    switch (attr) {
    case 75: *v = 8; break;   // compute capability major
    case 76: *v = 0; break;   // minor
    case 16: *v = 108; break; // SMs
    default: return INVALID_VALUE;
    }
    return d < devices ? OK : INVALID_DEVICE;
}
int cuDeviceTotalMem_v2(size_t *b, int d) { *b = total; return d < devices ? OK : INVALID_DEVICE; }

static int ctx_tag, stream_tag, event_tag;
int cuCtxCreate_v2(void **c, unsigned f, int d) { *c = &ctx_tag; return d < devices ? OK : INVALID_DEVICE; }
int cuCtxDestroy_v2(void *c) {
    if (c != &ctx_tag) return INVALID_VALUE;
    for (int i = 0; i < MAXA; i++)
        if (allocs[i].p) { free((void *)allocs[i].p); allocs[i].p = 0; }
    used = 0; live = 0;
    return OK;
}
int cuCtxSetCurrent(void *c) { return c == &ctx_tag ? OK : INVALID_VALUE; }
int cuMemGetInfo_v2(size_t *f, size_t *t) { *f = total - used; *t = total; return OK; }

int cuMemAlloc_v2(dptr *p, size_t n) {
    if (n == 0) return INVALID_VALUE;
    if (used + n > total) return OUT_OF_MEMORY;
    for (int i = 0; i < MAXA; i++)
        if (!allocs[i].p) {
            void *m = calloc(1, n);
            if (!m) return OUT_OF_MEMORY;
            allocs[i].p = (dptr)m; allocs[i].n = n; used += n; live++;
            *p = (dptr)m;
            return OK;
        }
    return OUT_OF_MEMORY;
}
int cuMemFree_v2(dptr p) {
    for (int i = 0; i < MAXA; i++)
        if (allocs[i].p == p) { free((void *)p); used -= allocs[i].n; allocs[i].p = 0; live--; return OK; }
    return INVALID_VALUE;
}
int cuMemcpyHtoD_v2(dptr d, const void *s, size_t n) { if (!inside(d, n)) return INVALID_VALUE; memcpy((void *)d, s, n); return OK; }
int cuMemcpyDtoH_v2(void *d, dptr s, size_t n) { if (!inside(s, n)) return INVALID_VALUE; memcpy(d, (void *)s, n); return OK; }
int cuMemcpyDtoD_v2(dptr d, dptr s, size_t n) { if (!inside(d, n) || !inside(s, n)) return INVALID_VALUE; memmove((void *)d, (void *)s, n); return OK; }
int cuMemcpyHtoDAsync_v2(dptr d, const void *s, size_t n, void *st) { return cuMemcpyHtoD_v2(d, s, n); }
int cuMemcpyDtoHAsync_v2(void *d, dptr s, size_t n, void *st) { return cuMemcpyDtoH_v2(d, s, n); }
int cuMemcpyDtoDAsync_v2(dptr d, dptr s, size_t n, void *st) { return cuMemcpyDtoD_v2(d, s, n); }
int cuMemsetD8Async(dptr d, unsigned char v, size_t n, void *st) { if (!inside(d, n)) return INVALID_VALUE; memset((void *)d, v, n); return OK; }
int cuStreamCreate(void **s, unsigned f) { *s = &stream_tag; return OK; }
int cuStreamDestroy_v2(void *s) { return s == &stream_tag ? OK : INVALID_VALUE; }
int cuStreamSynchronize(void *s) { return s == &stream_tag ? OK : INVALID_VALUE; }
int cuEventCreate(void **e, unsigned f) { *e = &event_tag; return OK; }
int cuEventDestroy_v2(void *e) { return OK; }
int cuEventRecord(void *e, void *s) { return OK; }
int cuEventSynchronize(void *e) { return OK; }
int cuEventElapsedTime(float *ms, void *a, void *b) { *ms = 0; return OK; }

// Modules: the PTX must look like PTX; functions are names that appear in
// it as ".entry NAME(".
static const char *ptx[8];
static int nptx;
static char names[256][64];
static int nparams[256];
static unsigned long long ptrmask[256]; // bit i: parameter i is a .u64 (a device pointer)
static int nnames;
static char last_error[256];
const char *fakecuda_last_error(void) { return last_error; }
int cuModuleLoadData(void **m, const void *image) {
    const char *s = image;
    if (!strstr(s, ".version") || !strstr(s, ".target sm_80") || nptx == 8) return INVALID_VALUE;
    ptx[nptx] = strdup(s);
    *m = (void *)(uintptr_t)(nptx + 1);
    nptx++;
    return OK;
}
int cuModuleUnload(void *m) { return OK; }
int cuModuleGetFunction(void **f, void *m, const char *name) {
    int mi = (int)(uintptr_t)m - 1;
    if (mi < 0 || mi >= nptx || nnames == 256) return INVALID_VALUE;
    char pat[80];
    snprintf(pat, sizeof pat, ".entry %s(", name);
    const char *at = strstr(ptx[mi], pat);
    if (!at) return NOT_FOUND;
    // Read the parameter list: ".param .u64 NAME_param_0," ... up to ")".
    const char *end = strchr(at, ')');
    int n = 0;
    unsigned long long mask = 0;
    for (const char *p = strstr(at, ".param "); p && p < end; p = strstr(p + 1, ".param ")) {
        if (strncmp(p, ".param .u64", 11) == 0) mask |= 1ull << n;
        n++;
    }
    nparams[nnames] = n;
    ptrmask[nnames] = mask;
    strncpy(names[nnames], name, 63);
    *f = (void *)(uintptr_t)(1000 + nnames++);
    return OK;
}
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shmem, void *s, void **params, void **extra) {
    int fi = (int)(uintptr_t)f - 1000;
    launches++;
    if (fi < 0 || fi >= nnames || s != &stream_tag || !params || extra) { bad_launches++; return INVALID_VALUE; }
    strncpy(last_kernel, names[fi], sizeof last_kernel - 1);
    if (!gx || !gy || !gz || gy > 65535 || gz > 65535 || !bx || !by || !bz || (size_t)bx * by * bz > 1024 ||
        shmem > 48 * 1024) {
        snprintf(last_error, sizeof last_error, "%s: grid %ux%ux%u block %ux%ux%u shmem %u", names[fi], gx, gy, gz, bx, by, bz, shmem);
        bad_launches++;
        return INVALID_VALUE;
    }
    // Every pointer argument is null or inside an allocation.
    for (int i = 0; i < nparams[fi]; i++) {
        if (!(ptrmask[fi] >> i & 1)) continue;
        dptr v = *(dptr *)params[i];
        if (v && !inside(v, 1)) {
            snprintf(last_error, sizeof last_error, "%s: parameter %d (%#llx) is outside device memory", names[fi], i, v);
            bad_launches++;
            return INVALID_VALUE;
        }
    }
    return OK;
}

static const char *msgs[] = {"no error", "invalid argument", "out of memory"};
int cuGetErrorString(int r, const char **s) {
    *s = r >= 0 && r <= 2 ? msgs[r] : r == INVALID_DEVICE ? "invalid device ordinal" : r == NOT_FOUND ? "named symbol not found" : "unknown";
    return OK;
}
