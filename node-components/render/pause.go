package render

import (
	"fmt"
	"strings"
)

// PauseImagePin is the pause (sandbox) image a Windows Server release runs.
type PauseImagePin struct {
	// Release is the Windows Server release's container tag (ltsc2022).
	Release string
	// Build is the host build, major.minor.build, as host.Facts reports it.
	Build string
	// Image is the pause image reference.
	Image string
}

// pauseImage is Kubernetes' own pause image at the version kubeadm v1.36
// pins (cmd/kubeadm/app/constants: PauseVersion 3.10.2). Its manifest list
// holds one windows/amd64 image per Windows Server release; 3.10.2 added
// ltsc2025 (kubernetes build/pause/CHANGELOG.md), and every Windows variant
// carries wincat.exe in System32 (build/pause/Dockerfile_windows), which
// kubectl port-forward needs. containerd picks the variant whose os.version
// matches the host build, so one reference serves every release; the table
// still pins per release so that a release whose image moves on can be
// changed alone.
const pauseImage = "registry.k8s.io/pause:3.10.2"

// PauseImages are the pinned pause images, one per supported Windows Server
// release.
var PauseImages = []PauseImagePin{
	{Release: "ltsc2019", Build: "10.0.17763", Image: pauseImage},
	{Release: "ltsc2022", Build: "10.0.20348", Image: pauseImage},
	{Release: "ltsc2025", Build: "10.0.26100", Image: pauseImage},
}

// PauseImage returns the pinned pause image for a Windows host build
// (10.0.20348). A Windows container runs only on a host of its own build, so
// an unknown build is an error rather than a guess.
func PauseImage(build string) (string, error) {
	known := make([]string, 0, len(PauseImages))
	for _, p := range PauseImages {
		if p.Build == build {
			return p.Image, nil
		}
		known = append(known, p.Build+" ("+p.Release+")")
	}
	return "", fmt.Errorf("no pause image is pinned for Windows build %q; known builds: %s", build, strings.Join(known, ", "))
}
