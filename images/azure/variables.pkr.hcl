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

# --- Windows itself ------------------------------------------------------------

variable "windows_updates" {
  type        = bool
  default     = true
  description = "Install every software update Windows Update offers during the build, restarting between passes, and fail if one is still pending. Nodes never update themselves (automatic updates are off by policy): patch them by building a new image and rolling it out. With false, the media or base image must already carry the release's minimum update (docs/images.md)."
}

variable "allow_evaluation" {
  type        = bool
  default     = false
  description = "Accept an evaluation edition of Windows Server. Every machine made from such an image runs for about 180 days from its first boot, then Windows shuts it down every hour: for labs only."
}

variable "ntp_servers" {
  type        = list(string)
  default     = []
  description = "NTP servers (host names or addresses) the nodes set their clocks by. Empty: on vSphere the DHCP server's (option 42), read by cloudbase-init at each machine's first boot, else Windows' default; on Azure the Hyper-V host's clock, as Azure sets it up."
  validation {
    condition     = length([for s in var.ntp_servers : s if can(regex("^[A-Za-z0-9][A-Za-z0-9.:-]*$", s))]) == length(var.ntp_servers)
    error_message = "Each of ntp_servers must be a host name or an address, without spaces or commas."
  }
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
      # KB4489899 (17763.379): the win-overlay network flannel's VXLAN needs.
      min_revision    = 379
      marketplace_sku = "2019-datacenter-core-smalldisk-g2"
    }
    "2022" = {
      container_release = "ltsc2022"
      build             = "10.0.20348"
      # KB5012637 (20348.681): the container networking fix Windows nodes
      # of Kubernetes distributions require of Windows Server 2022.
      min_revision    = 681
      marketplace_sku = "2022-datacenter-core-smalldisk-g2"
    }
    "2025" = {
      container_release = "ltsc2025"
      build             = "10.0.26100"
      # No update is known to be required on top of the release.
      min_revision    = 0
      marketplace_sku = "2025-datacenter-core-smalldisk-g2"
    }
  }
  release = local.windows_releases[var.windows_release]

  gallery_image_name    = var.gallery_image_name != "" ? var.gallery_image_name : "capwin-windows-${var.windows_release}${var.hyperv ? "-hyperv" : ""}"
  gallery_image_version = var.gallery_image_version != "" ? var.gallery_image_version : trimprefix(var.kubernetes_version, "v")

  cloudbase_init_msi_url = var.cloudbase_init_msi_url != "" ? var.cloudbase_init_msi_url : "https://github.com/cloudbase/cloudbase-init/releases/download/${var.cloudbase_init_version}/CloudbaseInitSetup_${replace(var.cloudbase_init_version, ".", "_")}_x64.msi"

  # This directory as an absolute path: Packer resolves the path given to
  # file() and templatefile() against the template's directory, and the
  # provisioners' paths against the working directory, so only an absolute
  # path means the same file to both, whether packer runs here or at the
  # repository's root (packer build images/<platform>).
  root = abspath(path.root)

  bundle_name = "capwin-node-bundle-${var.kubernetes_version}-windows-amd64.zip"
  bundle_dir  = var.bundle_dir != "" ? abspath(var.bundle_dir) : "${local.root}/../../out/bundle"
  bundle_zip  = "${local.bundle_dir}/${local.bundle_name}"
  # Packer cannot hash a binary file (its file() reads UTF-8 text only):
  # make bundle writes the zip's SHA-256 beside it, as sha256sum does.
  bundle_sha256 = var.bundle_sha256 != "" ? lower(var.bundle_sha256) : substr(file("${local.bundle_zip}.sha256"), 0, 64)

  # What each pass of install-windows-updates.ps1 is told, but its mode.
  windows_update_environment = [
    "CAPWIN_WINDOWS_UPDATES=${var.windows_updates}",
    "CAPWIN_WINDOWS_BUILD=${local.release.build}",
    "CAPWIN_MIN_REVISION=${local.release.min_revision}",
  ]

  # Where the build uploads its files on the VM; finalize-image.ps1 removes it.
  staging = "C:/Windows/Temp/capwin-image"
}
