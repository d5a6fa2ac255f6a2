# The Packer and plugin versions a build needs: Packer 1.10 or later, which
# no longer carries the builders, and the azure plugin 2.x, installed by
# `packer init images/azure`. This block is alone in its file because make test
# validates the definitions with Packer 1.9.4 (hack/tools/packer), the last
# release that carries the azure builder (plugin 1.x) and so runs where
# `packer init` cannot download: it reads every other file of this directory.
# docs/images.md says which arguments were checked against the 2.x plugin.
packer {
  required_version = ">= 1.10.0"
  required_plugins {
    azure = {
      source  = "github.com/hashicorp/azure"
      version = ">= 2.0.0"
    }
  }
}
