package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// binaryPath is where the image holds the manager, the Deployment's
	// command (config/manager/manager.yaml).
	binaryPath = "/manager"
	// nonRoot is distroless' nonroot user and group, which the image used
	// to run as; numeric, as the image has no /etc/passwd to look a name up
	// in, and so that the kubelet can check runAsNonRoot.
	nonRoot = "65532:65532"
	// refNameAnnotation names the image in index.json, as the OCI image
	// layout specifies; tools that read a layout by tag look it up.
	refNameAnnotation = "org.opencontainers.image.ref.name"
)

type platformImage struct {
	platform platform
	image    v1.Image
}

// newImage is the manager's image for p: FROM scratch, one layer holding
// only the binary, so there is no shell nor any other program to run. Its
// files' times and owners are fixed and its creation time is created, so
// the digest depends only on the binary and created.
func newImage(binary string, p platform, created time.Time) (v1.Image, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	layerTar, err := tarOf(filepath.Base(binaryPath), data, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer for %s: %w", p, err)
	}

	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	base, err = mutate.ConfigFile(base, &v1.ConfigFile{
		OS:           p.os,
		Architecture: p.arch,
		Variant:      p.variant(),
		// The config replaces empty.Image's, whose rootfs type the image
		// spec requires; mutate.Append adds the layer's diff ID.
		RootFS: v1.RootFS{Type: "layers"},
		Config: v1.Config{
			Entrypoint: []string{binaryPath},
			User:       nonRoot,
			WorkingDir: "/",
		},
	})
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: "hack/image: go build -trimpath -ldflags='-s -w' " + managerPackage,
			Comment:   "capwin-manager for " + p.String(),
		},
	})
	if err != nil {
		return nil, err
	}
	return mutate.CreatedAt(img, v1.Time{Time: created})
}

// tarOf is a layer holding one executable file at the root, owned by root
// (the non-root user reads and runs it, cannot change it).
func tarOf(name string, data []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Mode:     0o755,
		Size:     int64(len(data)),
		ModTime:  mtime,
		Format:   tar.FormatPAX,
	}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// newIndex is the multi-platform index of images, each with its platform
// in its descriptor as runtimes choose by it.
func newIndex(images []platformImage) v1.ImageIndex {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, pi := range images {
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add: pi.image,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{
				OS: pi.platform.os, Architecture: pi.platform.arch, Variant: pi.platform.variant(),
			}},
		})
	}
	return idx
}

// writeLayout writes the images' index as an OCI image layout at out:
// index.json names one entry, the multi-platform index, annotated with
// ref. It is written beside out and renamed into place, so out is never
// half written nor left with the blobs of an earlier build.
func writeLayout(out, ref string, images []platformImage) (v1.ImageIndex, error) {
	idx := newIndex(images)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(out), "."+filepath.Base(out)+"-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return nil, err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{refNameAnnotation: ref})); err != nil {
		return nil, fmt.Errorf("writing the OCI layout: %w", err)
	}
	if err := os.RemoveAll(out); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, out); err != nil {
		return nil, err
	}
	return idx, nil
}

// summary prints the index's digest and each platform's manifest digest
// and size (compressed layer, config and manifest: what a pull fetches).
func summary(w io.Writer, out, ref string, idx v1.ImageIndex, took time.Duration) error {
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %s index %s (%.0f s)\n", out, ref, d, took.Seconds())
	m, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	for _, desc := range m.Manifests {
		img, err := idx.Image(desc.Digest)
		if err != nil {
			return err
		}
		size, err := pullSize(img)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  %s/%s%s %s %.1f MiB\n", desc.Platform.OS, desc.Platform.Architecture,
			variantSuffix(desc.Platform.Variant), desc.Digest, float64(size)/(1<<20))
	}
	return nil
}

func variantSuffix(v string) string {
	if v == "" {
		return ""
	}
	return "/" + v
}

func pullSize(img v1.Image) (int64, error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	raw, err := img.RawManifest()
	if err != nil {
		return 0, err
	}
	n := int64(len(raw)) + m.Config.Size
	for _, l := range m.Layers {
		n += l.Size
	}
	return n, nil
}
