// Command image builds capwin-manager's OCI image without Docker (make
// image): the static binary for each platform, FROM scratch, written as an
// OCI image layout holding one multi-platform index.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"
)

func main() {
	root := flag.String("root", "../..", "the repository's root (the main module)")
	out := flag.String("out", "../../out/image", "the OCI image layout to write; replaced if it exists")
	ref := flag.String("image", "capwin-manager:dev", "the image's name, recorded in the layout's index.json (org.opencontainers.image.ref.name)")
	platforms := flag.String("platforms", strings.Join(defaultPlatforms, ","), "comma-separated os/arch list")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, *root, *out, *ref, strings.Split(*platforms, ","))
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, root, out, ref string, platforms []string) error {
	start := time.Now()
	created, err := sourceDateEpoch(ctx, root)
	if err != nil {
		return err
	}
	bins, err := os.MkdirTemp("", "capwin-image-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(bins) }()

	var images []platformImage
	for _, s := range platforms {
		p, err := parsePlatform(s)
		if err != nil {
			return err
		}
		t := time.Now()
		bin, err := buildManager(ctx, root, bins, p)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "built capwin-manager for %s in %.0f s\n", p, time.Since(t).Seconds())
		img, err := newImage(bin, p, created)
		if err != nil {
			return err
		}
		images = append(images, platformImage{platform: p, image: img})
	}
	idx, err := writeLayout(out, ref, images)
	if err != nil {
		return err
	}
	return summary(os.Stdout, out, ref, idx, time.Since(start))
}
