// mtpref: llama.cpp's multi-token-prediction (MTP, "NextN") head on a GGUF
// file that has one, as reference logits for smolgo's own head
// (models/qwen35 TestMTPLogitsMatchLlamaCpp). Our own code, compiled against
// the headers of the llama.cpp release node-llama-cpp ships and linked against
// its prebuilt libraries, like llamaref (see build.sh and README.md).
//
//	mtpref --model F.gguf --prompt NAME=T1,T2,... [--prompt ...] [--drafts 4]
//	       [--threads 1] [--cpu-variant haswell] [--verbose]
//
// For each prompt it
//   1. runs the model (a default context) over the whole prompt in one
//      llama_decode, keeping h_nextn, the hidden state before the output norm,
//      of every position, and takes the argmax of the last row's logits as the
//      model's next token;
//   2. runs the MTP block (an LLAMA_CONTEXT_TYPE_MTP context on the same model,
//      loaded with load_mtp) over the prompt in one llama_decode: row i is fed
//      token i with the model's h_nextn of position i-1 (zeros at position 0),
//      every row's logits are printed ("prefill");
//   3. drafts recursively: the first draft is fed the model's next token with
//      the model's h_nextn of the last prompt position, each later one the
//      block's own argmax token with the block's own h_nextn of the previous
//      draft; every draft's fed token, position and logits are printed.
//
// Output (stdout), one JSON object:
//   {"engine":"llama.cpp","version":V,"cpu_backend":B,"n_vocab":N,"n_embd":E,
//    "threads":T,"prompts":[{"name","tokens","target_next","prefill":[[...]],
//    "drafts":[{"token","pos","logits"}]}]}
// Floats are printed with 9 significant digits (exact for f32).
//
// The hidden-state calls (llama_set_embeddings_nextn,
// llama_get_embeddings_nextn[_ith]) are in llama.cpp's staging header
// src/llama-ext.h, which is C++ only: libllama exports them with C++ names, so
// they are declared here with those symbol names.

#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"

#ifndef LLAMA_RELEASE
#define LLAMA_RELEASE "unknown"
#endif

// src/llama-ext.h (C++ linkage in libllama)
void llama_set_embeddings_nextn(struct llama_context * ctx, bool value, bool masked)
    __asm__("_Z26llama_set_embeddings_nextnP13llama_contextbb");
float * llama_get_embeddings_nextn(struct llama_context * ctx)
    __asm__("_Z26llama_get_embeddings_nextnP13llama_context");
float * llama_get_embeddings_nextn_ith(struct llama_context * ctx, int32_t i)
    __asm__("_Z30llama_get_embeddings_nextn_ithP13llama_contexti");

static void die(const char * fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char * fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("mtpref: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void * xcalloc(size_t n, size_t size) {
    void * p = calloc(n ? n : 1, size ? size : 1);
    if (!p) die("out of memory (%zu x %zu bytes)", n, size);
    return p;
}

static bool g_verbose = false;

static void log_cb(enum ggml_log_level level, const char * text, void * ud) {
    (void) ud;
    static enum ggml_log_level last = GGML_LOG_LEVEL_NONE;
    if (level == GGML_LOG_LEVEL_CONT) level = last; else last = level;
    if (g_verbose || level >= GGML_LOG_LEVEL_WARN) fputs(text, stderr);
}

// The directory of libllama, where node-llama-cpp puts the libggml-cpu-*.so variants.
static void lib_dir(char * out, size_t n) {
    Dl_info info;
    if (!dladdr((void *) &llama_backend_init, &info) || !info.dli_fname) die("cannot locate libllama");
    snprintf(out, n, "%s", info.dli_fname);
    char * slash = strrchr(out, '/');
    if (slash) *slash = 0; else snprintf(out, n, ".");
}

// variant NULL: the best CPU backend ggml finds for this CPU; else exactly libggml-cpu-<variant>.so.
static void backend_init(const char * variant) {
    llama_log_set(log_cb, NULL);
    ggml_log_set(log_cb, NULL);
    char dir[4096];
    lib_dir(dir, sizeof(dir));
    if (variant) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/libggml-cpu-%s.so", dir, variant);
        if (!ggml_backend_load(path)) die("cannot load the CPU backend %s", path);
    } else {
        ggml_backend_load_all_from_path(dir);
    }
    llama_backend_init();
}

static int variant_cb(struct dl_phdr_info * info, size_t size, void * data) {
    (void) size;
    const char * n = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    n = n ? n + 1 : info->dlpi_name;
    if (n && strncmp(n, "libggml-cpu-", 12) == 0) {
        const char * v = n + 12, * dot = strstr(v, ".so");
        size_t len = dot ? (size_t) (dot - v) : strlen(v);
        if (len > 63) len = 63;
        memcpy(data, v, len);
        ((char *) data)[len] = 0;
    }
    return 0;
}

// The name of the CPU backend that was loaded (e.g. "haswell").
static void cpu_backend(char out[64]) {
    snprintf(out, 64, "unknown");
    dl_iterate_phdr(variant_cb, out);
}

typedef struct {
    const char * name;
    int32_t    * tokens;
    int          n;
} prompt;

// parse_prompt reads NAME=T1,T2,... into p.
static void parse_prompt(const char * arg, prompt * p) {
    const char * eq = strchr(arg, '=');
    if (!eq || eq == arg) die("--prompt %s: want NAME=T1,T2,...", arg);
    p->name = strndup(arg, (size_t) (eq - arg));
    const char * s = eq + 1;
    int cap = 1;
    for (const char * c = s; *c; c++) cap += *c == ',';
    p->tokens = xcalloc((size_t) cap, sizeof(int32_t));
    p->n = 0;
    while (*s) {
        char * end;
        long v = strtol(s, &end, 10);
        if (end == s || (*end && *end != ',')) die("--prompt %s: %.20s is not a token id", p->name, s);
        p->tokens[p->n++] = (int32_t) v;
        s = *end ? end + 1 : end;
    }
    if (p->n < 1) die("--prompt %s: no tokens", p->name);
}

static int argmax(const float * x, int n) {
    int a = 0;
    for (int i = 1; i < n; i++) if (x[i] > x[a]) a = i;
    return a;
}

static void print_row(const float * x, int n) {
    putchar('[');
    for (int i = 0; i < n; i++) {
        if (isnan(x[i]) || isinf(x[i])) fputs(i ? ",null" : "null", stdout);
        else printf(i ? ",%.9g" : "%.9g", (double) x[i]);
    }
    putchar(']');
}

// batch is a llama_batch over caller-owned arrays with room for n rows; embd may be NULL.
typedef struct {
    struct llama_batch b;
    llama_seq_id       seq0;
} batch;

static batch batch_new(int n, int n_embd) {
    batch x = {0};
    x.b.token = xcalloc((size_t) n, sizeof(llama_token));
    x.b.embd = n_embd ? xcalloc((size_t) n * (size_t) n_embd, sizeof(float)) : NULL;
    x.b.pos = xcalloc((size_t) n, sizeof(llama_pos));
    x.b.n_seq_id = xcalloc((size_t) n, sizeof(int32_t));
    x.b.seq_id = xcalloc((size_t) n, sizeof(llama_seq_id *));
    x.b.logits = xcalloc((size_t) n, sizeof(int8_t));
    return x;
}

static void batch_set(batch * x, int i, llama_token tok, llama_pos pos, bool logits) {
    x->b.token[i] = tok;
    x->b.pos[i] = pos;
    x->b.n_seq_id[i] = 1;
    x->b.seq_id[i] = &x->seq0; // every row is in sequence 0
    x->b.logits[i] = logits;
}

static void batch_free(batch * x) {
    free(x->b.token);
    free(x->b.embd);
    free(x->b.pos);
    free(x->b.n_seq_id);
    free(x->b.seq_id);
    free(x->b.logits);
}

static struct llama_context * new_context(struct llama_model * model, enum llama_context_type type, int n_ctx, int threads) {
    struct llama_context_params cp = llama_context_default_params();
    cp.ctx_type = type;
    cp.n_ctx = (uint32_t) n_ctx;
    cp.n_batch = cp.n_ubatch = (uint32_t) n_ctx;
    cp.n_seq_max = 1;
    cp.n_threads = cp.n_threads_batch = threads;
    cp.no_perf = true;
    struct llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) die("cannot create the %s context", type == LLAMA_CONTEXT_TYPE_MTP ? "MTP" : "model's");
    return ctx;
}

// run_prompt prints one prompt's JSON object.
static void run_prompt(struct llama_model * model, const prompt * p, int n_drafts, int threads, int n_vocab, int n_embd) {
    const int n = p->n;
    for (int i = 0; i < n; i++)
        if (p->tokens[i] < 0 || p->tokens[i] >= n_vocab) die("--prompt %s: token %d is outside the vocabulary of %d", p->name, p->tokens[i], n_vocab);
    const int n_ctx = ((n + n_drafts + 255) / 256) * 256;
    const size_t row = (size_t) n_embd * sizeof(float);

    // 1. the model over the prompt, h_nextn of every position
    struct llama_context * tgt = new_context(model, LLAMA_CONTEXT_TYPE_DEFAULT, n_ctx, threads);
    llama_set_embeddings_nextn(tgt, true, false);
    batch tb = batch_new(n, 0);
    tb.b.n_tokens = n;
    for (int i = 0; i < n; i++) batch_set(&tb, i, p->tokens[i], i, i == n - 1);
    if (llama_decode(tgt, tb.b)) die("%s: the model's llama_decode failed", p->name);
    const float * lg = llama_get_logits_ith(tgt, n - 1);
    const float * h_tgt = llama_get_embeddings_nextn(tgt);
    if (!lg || !h_tgt) die("%s: the model gave no logits or no h_nextn", p->name);
    const int target_next = argmax(lg, n_vocab);
    float * h = xcalloc((size_t) n, row); // h[i] = the model's h_nextn at position i
    memcpy(h, h_tgt, (size_t) n * row);

    printf("{\"name\":\"%s\",\"tokens\":[", p->name);
    for (int i = 0; i < n; i++) printf(i ? ",%d" : "%d", p->tokens[i]);
    printf("],\"target_next\":%d,\n\"prefill\":[", target_next);

    // 2. the block over the prompt: token i with the model's h at i-1, zeros at 0
    struct llama_context * mtp = new_context(model, LLAMA_CONTEXT_TYPE_MTP, n_ctx, threads);
    llama_set_embeddings_nextn(mtp, true, true);
    batch mb = batch_new(n, n_embd);
    mb.b.n_tokens = n;
    for (int i = 0; i < n; i++) batch_set(&mb, i, p->tokens[i], i, true);
    if (n > 1) memcpy(mb.b.embd + n_embd, h, (size_t) (n - 1) * row);
    if (llama_decode(mtp, mb.b)) die("%s: the MTP context's llama_decode failed on the prompt", p->name);
    for (int i = 0; i < n; i++) {
        const float * r = llama_get_logits_ith(mtp, i);
        if (!r) die("%s: no MTP logits for prompt row %d", p->name, i);
        if (i) putchar(',');
        putchar('\n');
        print_row(r, n_vocab);
    }

    // 3. recursive drafts, one token a step
    fputs("],\n\"drafts\":[", stdout);
    llama_token tok = target_next;
    float * hin = xcalloc(1, row);
    memcpy(hin, h + (size_t) (n - 1) * n_embd, row);
    for (int k = 0; k < n_drafts; k++) {
        mb.b.n_tokens = 1;
        batch_set(&mb, 0, tok, n + k, true);
        memcpy(mb.b.embd, hin, row);
        if (llama_decode(mtp, mb.b)) die("%s: the MTP context's llama_decode failed on draft %d", p->name, k);
        const float * r = llama_get_logits_ith(mtp, 0);
        const float * hn = llama_get_embeddings_nextn_ith(mtp, 0);
        if (!r || !hn) die("%s: no MTP logits or h_nextn for draft %d", p->name, k);
        printf("%s\n{\"token\":%d,\"pos\":%d,\"logits\":", k ? "," : "", tok, n + k);
        print_row(r, n_vocab);
        putchar('}');
        tok = argmax(r, n_vocab);
        memcpy(hin, hn, row);
    }
    fputs("]}", stdout);

    free(hin);
    free(h);
    batch_free(&mb);
    batch_free(&tb);
    llama_free(mtp);
    llama_free(tgt);
}

static void usage(void) {
    fputs("usage: mtpref --model F.gguf --prompt NAME=T1,T2,... [--prompt ...] [--drafts 4] [--threads 1]\n"
          "              [--cpu-variant V] [--verbose]\n", stderr);
    exit(2);
}

int main(int argc, char ** argv) {
    const char * model_path = NULL, * variant = NULL;
    int n_drafts = 4, threads = 1, n_prompts = 0;
    prompt * prompts = xcalloc((size_t) argc, sizeof(prompt));
    for (int i = 1; i < argc; i++) {
        const char * a = argv[i];
        bool has = i + 1 < argc;
        if (!strcmp(a, "--model") && has) model_path = argv[++i];
        else if (!strcmp(a, "--prompt") && has) parse_prompt(argv[++i], &prompts[n_prompts++]);
        else if (!strcmp(a, "--drafts") && has) n_drafts = atoi(argv[++i]);
        else if (!strcmp(a, "--threads") && has) threads = atoi(argv[++i]);
        else if (!strcmp(a, "--cpu-variant") && has) variant = argv[++i];
        else if (!strcmp(a, "--verbose")) g_verbose = true;
        else usage();
    }
    if (!model_path || n_prompts == 0) usage();
    if (n_drafts < 0) die("--drafts must be >= 0");
    if (threads < 1) die("--threads must be >= 1");

    backend_init(variant);
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.load_mtp = true;
    struct llama_model * model = llama_model_load_from_file(model_path, mp);
    if (!model) die("cannot load %s", model_path);
    if (llama_model_n_layer_nextn(model) < 1) die("%s has no MTP (NextN) block", model_path);
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    const int n_embd = llama_model_n_embd_out(model); // the width of h_nextn

    char backend[64];
    cpu_backend(backend);
    printf("{\"engine\":\"llama.cpp\",\"version\":\"%s\",\"cpu_backend\":\"%s\",\"n_vocab\":%d,\"n_embd\":%d,\"threads\":%d,\"prompts\":[",
           LLAMA_RELEASE, backend, n_vocab, n_embd, threads);
    for (int i = 0; i < n_prompts; i++) {
        if (i) putchar(',');
        putchar('\n');
        run_prompt(model, &prompts[i], n_drafts, threads, n_vocab, n_embd);
    }
    puts("]}");
    llama_model_free(model);
    return 0;
}
