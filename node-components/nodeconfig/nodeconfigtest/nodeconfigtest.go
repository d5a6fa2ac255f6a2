// Package nodeconfigtest holds the node configuration the tests of the
// node components start from, so that each test says only how its node
// differs.
package nodeconfigtest

import "github.com/capwin/capwin/node-components/nodeconfig"

// NodeName is the name a node of Worker's configuration takes: the computer
// name the infrastructure provider gives the VM of Machine
// win1-md-0-7f9c4-x2b8q, lower case.
const NodeName = "win1-md-q3zk5a"

// Worker is a flannel overlay worker, as the bootstrap provider renders one
// for cluster win1: without nodeName (the node takes its computer name) and
// without windowsBuild (the kubelet labels the Node with its host's build).
// Each call returns a new configuration.
func Worker() *nodeconfig.Config {
	return &nodeconfig.Config{
		SchemaVersion:     nodeconfig.SchemaVersion,
		KubernetesVersion: "v1.36.3",
		Join: nodeconfig.Join{
			APIServerEndpoint: "10.0.0.100:6443",
			Token:             "abcdef.0123456789abcdef",
			CACertHashes:      []string{"sha256:7b4a53d0a7b1f9a2d2c6f0e8f3b1c9a4e5d6c7b8a9f0e1d2c3b4a5f6e7d8c9b0"},
		},
		Taints: []nodeconfig.Taint{{Key: "os", Value: "windows", Effect: "NoSchedule"}},
		Kubelet: nodeconfig.Kubelet{
			SystemReserved: map[string]string{"cpu": "500m", "memory": "1536Mi"},
			KubeReserved:   map[string]string{"cpu": "500m", "memory": "512Mi"},
		},
		Containerd: nodeconfig.Containerd{Isolation: "Process"},
		Network: nodeconfig.Network{
			CNI: "flannel", Mode: "overlay", VXLANVNI: 4096, VXLANPort: 4789,
			PodCIDRs:              []string{"10.244.0.0/16"},
			ServiceCIDRs:          []string{"10.96.0.0/12"},
			NodeSubnet:            "10.0.0.0/24",
			OutboundNATExceptions: []string{"10.244.0.0/16", "10.96.0.0/12", "10.0.0.0/24"},
		},
	}
}
