# capwin's Windows Server node image for Azure: an image version in an Azure
# Compute Gallery, built from a Marketplace Windows Server image. A Windows
# HybridMachine names it in spec.azure.image.computeGallery. capwin's Azure
# controllers are not built yet: the image can be built, but capwin does not
# make Azure VMs from it yet. See docs/images.md.

packer {
  required_version = ">= 1.10.0"
  required_plugins {
    azure = {
      source  = "github.com/hashicorp/azure"
      version = ">= 2.0.0"
    }
  }
}

source "azure-arm" "windows" {
  subscription_id    = var.subscription_id
  tenant_id          = var.tenant_id
  client_id          = var.client_id
  client_secret      = var.client_secret
  use_azure_cli_auth = var.use_azure_cli_auth

  # Either a resource group Packer creates in location, or an existing one.
  location                  = var.build_resource_group_name == "" ? var.location : null
  build_resource_group_name = var.build_resource_group_name != "" ? var.build_resource_group_name : null
  vm_size                   = var.vm_size

  os_type         = "Windows"
  image_publisher = "MicrosoftWindowsServer"
  image_offer     = "WindowsServer"
  image_sku       = var.marketplace_image_sku != "" ? var.marketplace_image_sku : local.release.marketplace_sku
  image_version   = var.marketplace_image_version

  communicator   = "winrm"
  winrm_use_ssl  = true
  winrm_insecure = true
  winrm_timeout  = "15m"
  winrm_username = "packer"

  shared_image_gallery_destination {
    subscription        = var.gallery_subscription_id != "" ? var.gallery_subscription_id : var.subscription_id
    resource_group      = var.gallery_resource_group
    gallery_name        = var.gallery_name
    image_name          = local.gallery_image_name
    image_version       = local.gallery_image_version
    replication_regions = var.replication_regions
  }

  azure_tags = {
    "capwin-windows-release"    = local.release.container_release
    "capwin-kubernetes-version" = var.kubernetes_version
    "capwin-node-bundle-sha256" = local.bundle_sha256
    "capwin-cloudbase-init"     = var.cloudbase_init_version
    "capwin-hyperv"             = tostring(var.hyperv)
  }
}

build {
  sources = ["source.azure-arm.windows"]

  # Containers (and Hyper-V) and OpenSSH Server; the features need the restart.
  provisioner "powershell" {
    environment_vars = [
      "CAPWIN_WINDOWS_RELEASE=${local.release.container_release}",
      "CAPWIN_WINDOWS_BUILD=${local.release.build}",
      "CAPWIN_HYPERV=${var.hyperv}",
    ]
    # Windows Update (which adds the OpenSSH capability) does not serve a
    # plain WinRM session; elevated runs the script as a scheduled task.
    elevated_user     = "packer"
    elevated_password = build.Password
    script            = "${path.root}/../scripts/prepare-windows.ps1"
  }

  provisioner "windows-restart" {
    restart_timeout = "30m"
  }

  provisioner "powershell" {
    script = "${path.root}/../scripts/configure-openssh.ps1"
  }

  # The directory the uploads go to.
  provisioner "powershell" {
    inline = ["New-Item -ItemType Directory -Force -Path '${local.staging}' | Out-Null"]
  }

  provisioner "file" {
    sources = [
      "${path.root}/../files/cloudbase-init/azure/cloudbase-init.conf",
      "${path.root}/../files/cloudbase-init/azure/cloudbase-init-unattend.conf",
      "${path.root}/../scripts/capwin-first-boot.ps1",
    ]
    destination = "${local.staging}/"
  }

  provisioner "powershell" {
    environment_vars = [
      "CAPWIN_CLOUDBASE_INIT_URL=${local.cloudbase_init_msi_url}",
      "CAPWIN_CLOUDBASE_INIT_SHA256=${var.cloudbase_init_msi_sha256}",
      "CAPWIN_CLOUDBASE_INIT_MIN_VERSION=1.1.7",
      "CAPWIN_STAGING=${local.staging}",
    ]
    script = "${path.root}/../scripts/install-cloudbase-init.ps1"
  }

  provisioner "file" {
    source      = local.bundle_zip
    destination = "${local.staging}/${local.bundle_name}"
  }

  provisioner "powershell" {
    environment_vars = [
      "CAPWIN_BUNDLE_ZIP=${local.staging}/${local.bundle_name}",
      "CAPWIN_BUNDLE_SHA256=${local.bundle_sha256}",
      "CAPWIN_KUBERNETES_VERSION=${var.kubernetes_version}",
      "CAPWIN_HYPERV=${var.hyperv}",
    ]
    script = "${path.root}/../scripts/install-node-bundle.ps1"
  }

  provisioner "powershell" {
    script = "${path.root}/../scripts/prepull-pause-image.ps1"
  }

  provisioner "powershell" {
    environment_vars = [
      "CAPWIN_PLATFORM=azure",
      "CAPWIN_STAGING=${local.staging}",
    ]
    script = "${path.root}/../scripts/finalize-image.ps1"
  }

  # Last: generalize with cloudbase-init's Unattend.xml, in the sequence the
  # azure-arm builder documents; it then captures the VM.
  provisioner "powershell" {
    script = "${path.root}/../scripts/sysprep-azure.ps1"
  }
}
