# Variables of the Azure Windows node image. Set them in a *.pkrvars.hcl file
# or with -var; secrets are sensitive and kept out of Packer's output. See
# docs/images.md.

# --- What the image is -------------------------------------------------------

variable "windows_release" {
  type        = string
  default     = "2022"
  description = "Windows Server release: 2019, 2022 or 2025 (ltsc2019, ltsc2022, ltsc2025)."
  validation {
    condition     = contains(["2019", "2022", "2025"], var.windows_release)
    error_message = "The windows_release must be 2019, 2022 or 2025."
  }
}

variable "kubernetes_version" {
  type        = string
  default     = "v1.36.3"
  description = "Kubernetes version of the node bundle (make bundle's); it selects out/bundle/capwin-node-bundle-<version>-windows-amd64.zip and, without the v, is the default gallery image version."
  validation {
    condition     = can(regex("^v[0-9]+\\.[0-9]+\\.[0-9]+$", var.kubernetes_version))
    error_message = "The kubernetes_version must look like v1.36.3."
  }
}

variable "hyperv" {
  type        = bool
  default     = false
  description = "Also enable Hyper-V, for pods with Hyper-V isolation (vm_size must support nested virtualization)."
}

# --- Azure credentials and the build VM ----------------------------------------

variable "subscription_id" {
  type        = string
  description = "Subscription of the build VM (and of the gallery unless gallery_subscription_id is set)."
}

variable "tenant_id" {
  type    = string
  default = ""
}

variable "client_id" {
  type        = string
  default     = ""
  description = "Service principal's application ID; empty with use_azure_cli_auth."
}

variable "client_secret" {
  type      = string
  default   = ""
  sensitive = true
}

variable "use_azure_cli_auth" {
  type        = bool
  default     = false
  description = "Authenticate as the user az login signed in."
}

variable "location" {
  type        = string
  default     = ""
  description = "Region of the build VM, in a resource group Packer creates and deletes; or set build_resource_group_name."
}

variable "build_resource_group_name" {
  type        = string
  default     = ""
  description = "Existing resource group for the build VM, instead of location."
}

variable "vm_size" {
  type        = string
  default     = "Standard_D4s_v5"
  description = "Size of the build VM; a size with nested virtualization when hyperv is true."
}

variable "marketplace_image_version" {
  type        = string
  default     = "latest"
  description = "Version of the Marketplace Windows Server image to start from; pin it for a reproducible image."
}

variable "marketplace_image_sku" {
  type        = string
  default     = ""
  description = "Marketplace SKU of the WindowsServer offer; empty for <release>-datacenter-core-smalldisk-g2. A Gen2 SKU needs a Gen2 (V2) gallery image definition."
}

# --- Azure Compute Gallery destination -----------------------------------------

variable "gallery_subscription_id" {
  type        = string
  default     = ""
  description = "Subscription of the gallery; empty for subscription_id."
}

variable "gallery_resource_group" {
  type        = string
  description = "Resource group of the gallery (computeGallery.resourceGroup)."
}

variable "gallery_name" {
  type        = string
  description = "Azure Compute Gallery (computeGallery.gallery)."
}

variable "gallery_image_name" {
  type        = string
  default     = ""
  description = "Image definition, which must exist (computeGallery.name); empty for capwin-windows-<release> (with -hyperv when hyperv is true)."
}

variable "gallery_image_version" {
  type        = string
  default     = ""
  description = "Image version to create, Major.Minor.Patch (computeGallery.version); empty for kubernetes_version without its v."
  validation {
    condition     = var.gallery_image_version == "" || can(regex("^[0-9]+\\.[0-9]+\\.[0-9]+$", var.gallery_image_version))
    error_message = "The gallery_image_version must be empty or Major.Minor.Patch."
  }
}

variable "replication_regions" {
  type        = list(string)
  default     = []
  description = "Regions to replicate the image version to; empty for the build's location only."
}

# --- Software in the image ----------------------------------------------------

variable "cloudbase_init_version" {
  type        = string
  default     = "1.1.8"
  description = "cloudbase-init version: 1.1.7 or later."
  validation {
    condition     = can(regex("^(1\\.1\\.([7-9]|[1-9][0-9]+)|1\\.([2-9]|[1-9][0-9]+)\\.[0-9]+|([2-9]|[1-9][0-9]+)\\.[0-9]+\\.[0-9]+)$", var.cloudbase_init_version))
    error_message = "The cloudbase_init_version must be 1.1.7 or later."
  }
}

variable "cloudbase_init_msi_url" {
  type        = string
  default     = ""
  description = "URL of the cloudbase-init x64 MSI; empty for the GitHub release asset of cloudbase_init_version."
}

variable "cloudbase_init_msi_sha256" {
  type        = string
  description = "SHA-256 of that MSI; the build refuses any other file."
  validation {
    condition     = can(regex("^[0-9a-fA-F]{64}$", var.cloudbase_init_msi_sha256))
    error_message = "The cloudbase_init_msi_sha256 must be 64 hex digits."
  }
}

variable "bundle_dir" {
  type        = string
  default     = ""
  description = "Directory holding make bundle's capwin-node-bundle-<kubernetes_version>-windows-amd64.zip; empty for the repository's out/bundle."
}

variable "bundle_sha256" {
  type        = string
  default     = ""
  description = "SHA-256 the bundle zip must have; empty to take the zip's own (the upload is then checked, not the zip's origin)."
  validation {
    condition     = var.bundle_sha256 == "" || can(regex("^[0-9a-fA-F]{64}$", var.bundle_sha256))
    error_message = "The bundle_sha256 must be empty or 64 hex digits."
  }
}

locals {
  # The supported releases: each one's container tag, host build and the
  # default Marketplace SKU (Server Core, small disk, Gen2). The test in
  # hack/bundle holds the tags and builds to the node agent's pinned pause
  # images.
  windows_releases = {
    "2019" = {
      container_release = "ltsc2019"
      build             = "10.0.17763"
      marketplace_sku   = "2019-datacenter-core-smalldisk-g2"
    }
    "2022" = {
      container_release = "ltsc2022"
      build             = "10.0.20348"
      marketplace_sku   = "2022-datacenter-core-smalldisk-g2"
    }
    "2025" = {
      container_release = "ltsc2025"
      build             = "10.0.26100"
      marketplace_sku   = "2025-datacenter-core-smalldisk-g2"
    }
  }
  release = local.windows_releases[var.windows_release]

  gallery_image_name    = var.gallery_image_name != "" ? var.gallery_image_name : "capwin-windows-${var.windows_release}${var.hyperv ? "-hyperv" : ""}"
  gallery_image_version = var.gallery_image_version != "" ? var.gallery_image_version : trimprefix(var.kubernetes_version, "v")

  cloudbase_init_msi_url = var.cloudbase_init_msi_url != "" ? var.cloudbase_init_msi_url : "https://github.com/cloudbase/cloudbase-init/releases/download/${var.cloudbase_init_version}/CloudbaseInitSetup_${replace(var.cloudbase_init_version, ".", "_")}_x64.msi"

  bundle_name   = "capwin-node-bundle-${var.kubernetes_version}-windows-amd64.zip"
  bundle_dir    = var.bundle_dir != "" ? var.bundle_dir : "${path.root}/../../out/bundle"
  bundle_zip    = "${local.bundle_dir}/${local.bundle_name}"
  bundle_sha256 = var.bundle_sha256 != "" ? lower(var.bundle_sha256) : filesha256(local.bundle_zip)

  # Where the build uploads its files on the VM; finalize-image.ps1 removes it.
  staging = "C:/Windows/Temp/capwin-image"
}
