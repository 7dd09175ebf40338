# smolgo's server (examples/webchat: the OpenAI and Anthropic APIs, the web
# chat, /metrics) as a container image: one static binary built with
# CGO_ENABLED=0 (smolgo is pure Go) on distroless/static, which has no shell
# and no libc. Models are not in the image: mount them at /models.
#
#   docker build -t smolgo .
#   docker run --rm -p 8080:8080 -v "$PWD/models:/models:ro" -v smolgo-cache:/cache \
#     smolgo -model /models/SmolLM3-3B-Q4_K_M.gguf
#
# deploy/kubernetes/ runs the same image as a Deployment behind a Service
# and a Gateway API Inference Extension InferencePool; docs/serving.md says
# how the pieces fit.

# The Go version of go.mod.
FROM golang:1.26-bookworm AS build
WORKDIR /src
# The module's dependencies first, so that a source change reuses this layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# -trimpath: no build paths in the binary; -s -w: no symbol tables (smaller).
# The CPU kernels pick AVX2 or AVX-512 at run time, so one amd64 binary
# serves every x86-64 machine; build with --platform linux/arm64 for Arm.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/webchat ./examples/webchat

# static: CA certificates, /etc/passwd with nonroot (65532), tzdata; no libc.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/webchat /usr/local/bin/webchat
# Models (read-only) and the prompt cache's files (-prompt-cache-dir).
VOLUME ["/models", "/cache"]
EXPOSE 8080
USER nonroot:nonroot
# Listen on every interface (webchat's default is loopback only), keep
# prompts on disk across restarts, drain for 25 s on SIGTERM (Kubernetes
# waits 30 s by default before it kills a pod).
ENTRYPOINT ["/usr/local/bin/webchat", "-addr", "0.0.0.0:8080", "-prompt-cache-dir", "/cache", "-drain-timeout", "25s"]
# The model: override with -model /models/YOUR.gguf (and any other flag).
CMD ["-model", "/models/model.gguf"]
