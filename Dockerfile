# The driver's image: /manager (the controller) and /etcd-stage (the
# restore's staging step, which the staging Job runs from this same image),
# static, on scratch, with a CA bundle for https S3 endpoints and nothing
# else (no shell, no package manager), running as 65532:65532.
#
# The binaries are built on the host, not in a build stage: no base image
# has to be pulled, and two builds of one commit give the same digest.
# `make image-context` lays the context out (bin/image/context):
#
#   ca-certificates.crt            NSS roots, from hack/tools/cabundle
#   <os>/<arch>/manager            CGO_ENABLED=0, -trimpath, version stamped
#   <os>/<arch>/etcd-stage
#
# `make image` builds it with buildah; the release workflow builds the same
# file with docker buildx for linux/amd64 and linux/arm64.
FROM scratch

ARG TARGETPLATFORM
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=unknown
ARG REVISION=unknown
ARG CREATED=1970-01-01T00:00:00Z
ARG SOURCE=https://github.com/etcd-backup-driver/etcd-backup-driver
ARG LICENSES=NOASSERTION

LABEL org.opencontainers.image.title="etcd-backup-driver" \
      org.opencontainers.image.description="The Etcd strategy driver of the Cozystack backups API: backups of tenant etcd clusters to S3 and in-place restores" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.url="${SOURCE}" \
      org.opencontainers.image.documentation="${SOURCE}/blob/main/docs/install.md" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="${LICENSES}"

COPY --chmod=0444 ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --chmod=0555 ${TARGETOS}/${TARGETARCH}/manager /manager
COPY --chmod=0555 ${TARGETOS}/${TARGETARCH}/etcd-stage /etcd-stage

USER 65532:65532
ENTRYPOINT ["/manager"]
