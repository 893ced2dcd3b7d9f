# Gatehouse container image, built from source in two stages: a golang
# stage compiles a static binary (CGO_ENABLED=0; the SQLite driver is pure
# Go), and the final image holds only it and the CA certificates on an empty
# base (scratch), running as a non-root numeric user. From a clone:
#
#   docker build -t gatehouse:local .
#   podman build --format docker -t gatehouse:local .
#
# (--format docker keeps the HEALTHCHECK, which the OCI image format drops.)
# It needs BuildKit (docker's default builder since Docker 23) or podman/
# buildah, for the cache mount and $BUILDPLATFORM. Dockerfile.prebuilt is the
# offline variant that packs a binary built beforehand (scripts/image.sh; CI,
# which cannot pull a golang image); keep both final stages alike.

# Go 1.26.8, the release CI tests with (go.mod asks for 1.26.0 or newer).
# The stage runs on the builder's own platform and cross-compiles for the
# target one, so a multi-arch build needs no emulation.
FROM --platform=$BUILDPLATFORM golang:1.26.8-bookworm AS build
WORKDIR /src
# Modules in a layer of their own, downloaded again only when go.mod or
# go.sum change.
COPY go.mod go.sum ./
RUN go mod download
# The whole clone, .git included (.dockerignore leaves out only what git
# ignores): go build records the commit `gatehouse version` prints, with
# +dirty when git status shows changes. The cache mount keeps compiled
# packages between builds; when it is empty, everything is compiled.
COPY . .
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -buildvcs=true -trimpath -ldflags='-s -w' -o /out/gatehouse ./cmd/gatehouse \
 && mkdir /out/data

FROM scratch

ARG VERSION=dev
LABEL org.opencontainers.image.title="Gatehouse" \
      org.opencontainers.image.description="Self-hosted passwordless authentication and user management" \
      org.opencontainers.image.source="https://github.com/gatehouse-auth/gatehouse" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}"

# Go reads this path first for the system's CA bundle: outgoing HTTPS
# (webhooks, Postmark, Twilio, SMS gateways) and SMTP over TLS verify with it.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/gatehouse /gatehouse

# The data directory (the SQLite database when no PostgreSQL URL is set) and
# a temporary directory (SQLite's large sorts), owned by the user: scratch has
# no /tmp, and WORKDIR or VOLUME alone would make them root's. COPY of an
# empty directory is how a scratch image gets a directory with an owner.
COPY --from=build --chown=65532:65532 /out/data /data
COPY --from=build --chown=65532:65532 /out/data /tmp

# The API on 8080; /metrics alone on 9090 (metrics.addr), which the API
# port does not serve outside --dev. Publish 8080 only; let Prometheus
# scrape http://<container>:9090/metrics from inside the container network.
# With host networking, set GATEHOUSE_METRICS_ADDR to a private address.
ENV GATEHOUSE_DATA_DIR=/data \
    GATEHOUSE_HTTP_ADDR=0.0.0.0:8080 \
    GATEHOUSE_METRICS_ADDR=0.0.0.0:9090 \
    TMPDIR=/tmp
USER 65532:65532
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8080 9090

# No shell or curl here: the binary asks its own /healthz (at http.addr).
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["/gatehouse", "healthcheck"]

ENTRYPOINT ["/gatehouse"]
CMD ["serve"]
