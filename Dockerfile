# capwin-manager: both providers in one static binary on a minimal base.
# Build: docker build --build-arg GO_VERSION=1.26 -t capwin-manager:dev .
ARG GO_VERSION=1.26
FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
COPY node-components/go.mod node-components/go.sum* node-components/
RUN go mod download
COPY . .
ARG TARGETOS=linux
ARG TARGETARCH=amd64
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w" -o /out/capwin-manager ./cmd/capwin-manager

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/capwin-manager /manager
USER 65532:65532
ENTRYPOINT ["/manager"]
