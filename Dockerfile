# replay as a small static image: make image (needs a Docker engine).
# Build stage: a static binary, CGO off.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.release=${VERSION}" -o /out/replay ./cmd/replay

# Run stage: no shell, no package manager, a non-root user. Traffic comes
# from a mounted file (-f /traffic/traffic.jsonl); flags from arguments or
# REPLAY_* environment variables.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/replay /replay
USER 65532:65532
ENTRYPOINT ["/replay"]
CMD ["--help"]
