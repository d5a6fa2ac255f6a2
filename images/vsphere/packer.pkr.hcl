# The Packer and plugin versions a build needs: Packer 1.10 or later, which
# no longer carries the builders, and the vsphere plugin 2.x, installed by
# `packer init images/vsphere`. This block is alone in its file because make test
# validates the definitions with Packer 1.9.4 (hack/tools/packer), the last
# release that carries the vsphere builder (plugin 1.x) and so runs where
# `packer init` cannot download: it reads every other file of this directory.
# docs/images.md says which arguments were checked against the 2.x plugin.
packer {
  required_version = ">= 1.10.0"
  required_plugins {
    vsphere = {
      source  = "github.com/vmware/vsphere"
      version = ">= 2.0.0"
    }
  }
}
