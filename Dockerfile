# Gatehouse container image: the static binary and CA certificates on an
# empty base (scratch), running as a non-root numeric user.
#
# There is no build stage: the image packs a binary built beforehand, so it
# builds offline (no golang image to pull) and holds exactly the binary that
# was tested. The build context is a directory holding `gatehouse` (static:
# CGO_ENABLED=0), `ca-certificates.crt` and an empty directory `data`.
# scripts/image.sh prepares it in dist/image and builds:
#
#   scripts/image.sh gatehouse:0.1.0     # podman; CONTAINER_TOOL=docker for docker
#
# which amounts to:
#
#   mkdir -p dist/image/data
#   CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o dist/image/gatehouse ./cmd/gatehouse
#   cp /etc/ssl/certs/ca-certificates.crt dist/image/
#   podman build --format docker -t gatehouse:0.1.0 -f Dockerfile dist/image
#
# (--format docker keeps the HEALTHCHECK, which the OCI image format drops.)
# docs/install.md shows a multi-stage variant for builders that can pull a
# golang image.
FROM scratch

ARG VERSION=dev
LABEL org.opencontainers.image.title="Gatehouse" \
      org.opencontainers.image.description="Self-hosted passwordless authentication and user management" \
      org.opencontainers.image.source="https://github.com/gatehouse-auth/gatehouse" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}"

# Go reads this path first for the system's CA bundle: outgoing HTTPS
# (webhooks, Postmark, Twilio, SMS gateways) and SMTP over TLS verify with it.
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY gatehouse /gatehouse

# The data directory (the SQLite database when no PostgreSQL URL is set) and
# a temporary directory (SQLite's large sorts), owned by the user: scratch has
# no /tmp, and WORKDIR or VOLUME alone would make them root's. COPY of an
# empty directory is how a scratch image gets a directory with an owner.
COPY --chown=65532:65532 data /data
COPY --chown=65532:65532 data /tmp

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
