# Variables of the vSphere Windows node image. Set them in a *.pkrvars.hcl
# file or with -var; secrets (passwords, SHA-256 sums are not secret) are
# sensitive and kept out of Packer's output. See docs/images.md.

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
  description = "Kubernetes version of the node bundle (make bundle's); it names the template and selects out/bundle/capwin-node-bundle-<version>-windows-amd64.zip."
  validation {
    condition     = can(regex("^v[0-9]+\\.[0-9]+\\.[0-9]+$", var.kubernetes_version))
    error_message = "The kubernetes_version must look like v1.36.3."
  }
}

variable "hyperv" {
  type        = bool
  default     = false
  description = "Also enable Hyper-V, for pods with Hyper-V isolation (the VM gets nested virtualization)."
}

variable "template_name" {
  type        = string
  default     = ""
  description = "Name of the resulting VM template; empty for windows-<release>-kube-<kubernetes_version> (with -hyperv when hyperv is true)."
}

# --- vCenter and placement ---------------------------------------------------

variable "vcenter_server" {
  type        = string
  description = "vCenter host name or address."
}

variable "vcenter_username" {
  type        = string
  description = "vCenter user that creates the build VM and the template."
}

variable "vcenter_password" {
  type        = string
  sensitive   = true
  description = "That user's password."
}

variable "vcenter_insecure" {
  type        = bool
  default     = false
  description = "Skip the verification of vCenter's certificate (labs only)."
}

variable "datacenter" {
  type        = string
  description = "Datacenter of the build VM and the template."
}

variable "cluster" {
  type        = string
  default     = ""
  description = "Compute cluster of the build VM (cluster or host must be set)."
}

variable "esxi_host" {
  type        = string
  default     = ""
  description = "ESXi host of the build VM, instead of or within the cluster."
}

variable "resource_pool" {
  type        = string
  default     = ""
  description = "Resource pool of the build VM; the cluster's or host's root pool when empty."
}

variable "datastore" {
  type        = string
  description = "Datastore of the build VM's disk and of the template."
}

variable "folder" {
  type        = string
  default     = ""
  description = "VM folder of the template."
}

variable "network" {
  type        = string
  description = "Network (port group) of the build VM's vmxnet3 NIC; it needs DHCP and a way to the MSI download and registry.k8s.io."
}

# --- The build VM -------------------------------------------------------------

variable "cpus" {
  type    = number
  default = 4
}

variable "memory_mib" {
  type    = number
  default = 8192
}

variable "disk_gib" {
  type        = number
  default     = 60
  description = "OS disk of the template (vsphere-iso); clones may have a larger one (HybridMachine diskGiB), which cloudbase-init extends the volume to."
}

variable "winrm_username" {
  type        = string
  default     = "Administrator"
  description = "Account Packer connects as: the Administrator the answer file sets up (vsphere-iso), or an administrator of the base template (vsphere-clone)."
  validation {
    # The nodes disable the build's account; cloudbase-init's user, whose
    # SSH keys log in to a node, must be another.
    condition     = lower(var.winrm_username) != "admin"
    error_message = "The winrm_username must not be Admin, cloudbase-init's user on the nodes: every node disables the account the build logged in as."
  }
}

variable "admin_password" {
  type        = string
  sensitive   = true
  description = "Password of winrm_username: the answer file sets it for Administrator (vsphere-iso); the base template's (vsphere-clone). Machines made from the image disable the built-in Administrator."
  validation {
    # The answer file is XML: these characters would break it.
    condition     = length(var.admin_password) >= 8 && !can(regex("[<>&\"']", var.admin_password))
    error_message = "The admin_password needs at least 8 characters and none of < > & \" '."
  }
}

# --- vsphere-iso: install from the Windows Server ISO ---------------------------

variable "windows_iso_path" {
  type        = string
  default     = ""
  description = "Datastore path of the Windows Server ISO, for example \"[iso-datastore] windows/windows-server-2022.iso\" (vsphere-iso)."
}

variable "vmware_tools_iso_path" {
  type        = string
  default     = "[] /vmimages/tools-isoimages/windows.iso"
  description = "Datastore path of the VMware Tools ISO for Windows; the default is the one ESXi hosts carry (vsphere-iso)."
}

variable "windows_image_name" {
  type        = string
  default     = ""
  description = "Image in the ISO's install.wim to install; empty for Windows Server <release> SERVERDATACENTERCORE (vsphere-iso)."
}

variable "product_key" {
  type        = string
  default     = ""
  sensitive   = true
  description = "Product key for the answer file, for media that need one (retail, MAK); empty for volume-licence media, which install with their KMS client key (vsphere-iso)."
}

# --- vsphere-clone: start from a base template ----------------------------------

variable "base_template" {
  type        = string
  default     = ""
  description = "Inventory path or name of a Windows Server template (not generalized, VMware Tools installed, WinRM over HTTP with basic authentication for winrm_username) to clone (vsphere-clone)."
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
  description = "cloudbase-init version: 1.1.7 or later (1.1.5 and 1.1.6 fail on guestinfo network entries without nameservers; 1.1.4 does not read the network from guestinfo)."
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
  # The supported releases: each one's container tag, host build, vSphere
  # guest OS type and the install.wim image of its Server Core Datacenter
  # edition. The test in hack/bundle holds the tags and builds to the node
  # agent's pinned pause images.
  windows_releases = {
    "2019" = {
      container_release = "ltsc2019"
      build             = "10.0.17763"
      # KB4489899 (17763.379): the win-overlay network flannel's VXLAN needs.
      min_revision  = 379
      guest_os_type = "windows2019srv_64Guest"
      image_name    = "Windows Server 2019 SERVERDATACENTERCORE"
    }
    "2022" = {
      container_release = "ltsc2022"
      build             = "10.0.20348"
      # KB5012637 (20348.681): the container networking fix Windows nodes
      # of Kubernetes distributions require of Windows Server 2022.
      min_revision  = 681
      guest_os_type = "windows2019srvNext_64Guest"
      image_name    = "Windows Server 2022 SERVERDATACENTERCORE"
    }
    "2025" = {
      container_release = "ltsc2025"
      build             = "10.0.26100"
      # No update is known to be required on top of the release.
      min_revision  = 0
      guest_os_type = "windows2022srvNext_64Guest"
      image_name    = "Windows Server 2025 SERVERDATACENTERCORE"
    }
  }
  release = local.windows_releases[var.windows_release]

  template_name = var.template_name != "" ? var.template_name : "windows-${var.windows_release}-kube-${var.kubernetes_version}${var.hyperv ? "-hyperv" : ""}"

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
