# The local server as a container image: `docker build -t agent-output-verifier .`
# Small (distroless, the binary and libc only), non-root, read-only root file system friendly:
# the key and the embedded store live on the /data volume. See docs/operations.md, "In a container".
FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p verifier --bin verifier \
 && install -D -m 0755 target/release/verifier /out/verifier \
 && install -d -m 0700 /out/data

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/verifier /usr/local/bin/verifier
# Owned by the image's non-root user (65532), so a fresh named volume starts writable.
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV VERIFIER_LISTEN=0.0.0.0:8080 \
    VERIFIER_DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=6s --start-period=5s --retries=3 \
  CMD ["/usr/local/bin/verifier", "health", "http://127.0.0.1:8080/health"]
ENTRYPOINT ["/usr/local/bin/verifier"]
CMD ["serve"]
