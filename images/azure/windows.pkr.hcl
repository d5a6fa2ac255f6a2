# capwin's Windows Server node image for Azure: an image version in an Azure
# Compute Gallery, built from a Marketplace Windows Server image. A Windows
# HybridMachine names it in spec.azure.image.computeGallery. See
# docs/images.md.

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
    "capwin-hyperv"             = var.hyperv ? "true" : "false"
  }
}

build {
  sources = ["source.azure-arm.windows"]

  # The release and edition checked; automatic updates off; Containers (and
  # Hyper-V) and OpenSSH Server; the features need the restart.
  provisioner "powershell" {
    environment_vars = [
      "CAPWIN_WINDOWS_RELEASE=${local.release.container_release}",
      "CAPWIN_WINDOWS_BUILD=${local.release.build}",
      "CAPWIN_HYPERV=${var.hyperv}",
      "CAPWIN_ALLOW_EVALUATION=${var.allow_evaluation}",
    ]
    # Windows Update (which adds the OpenSSH capability) does not serve a
    # plain WinRM session; elevated runs the script as a scheduled task.
    elevated_user     = "packer"
    elevated_password = build.Password
    script            = "${local.root}/../scripts/prepare-windows.ps1"
  }

  provisioner "windows-restart" {
    restart_timeout = "30m"
  }

  # Windows Update: five passes, each followed by a restart (an update can
  # hold another back until it is installed and the machine restarted), then
  # a check that none is pending, no restart is, and Windows carries the
  # release's minimum update. Elevated: the Windows Update Agent does not
  # install for a remote session. A pass that hangs (an update waiting for
  # input) fails the build after two hours.
  provisioner "powershell" {
    environment_vars  = concat(local.windows_update_environment, ["CAPWIN_WINDOWS_UPDATE_MODE=install"])
    elevated_user     = "packer"
    elevated_password = build.Password
    script            = "${local.root}/../scripts/install-windows-updates.ps1"
    timeout           = "2h"
  }

  provisioner "windows-restart" {
    restart_timeout = "1h"
  }

  provisioner "powershell" {
    environment_vars  = concat(local.windows_update_environment, ["CAPWIN_WINDOWS_UPDATE_MODE=install"])
    elevated_user     = "packer"
    elevated_password = build.Password
    script            = "${local.root}/../scripts/install-windows-updates.ps1"
    timeout           = "2h"
  }

  provisioner "windows-restart" {
    restart_timeout = "1h"
  }

  provisioner "powershell" {
    environment_vars  = concat(local.windows_update_environment, ["CAPWIN_WINDOWS_UPDATE_MODE=install"])
    elevated_user     = "packer"
    elevated_password = build.Password
    script            = "${local.root}/../scripts/install-windows-updates.ps1"
    timeout           = "2h"
  }

  provisioner "windows-restart" {
    restart_timeout = "1h"
  }

  provisioner "powershell" {
    environment_vars  = concat(local.windows_update_environment, ["CAPWIN_WINDOWS_UPDATE_MODE=install"])
    elevated_user     = "packer"
    elevated_password = build.Password
    script            = "${local.root}/../scripts/install-windows-updates.ps1"
    timeout           = "2h"
  }

  provisioner "windows-restart" {
    restart_timeout = "1h"
  }

  provisioner "powershell" {
    environment_vars  = concat(local.windows_update_environment, ["CAPWIN_WINDOWS_UPDATE_MODE=install"])
    elevated_user     = "packer"
    elevated_password = build.Password
    script            = "${local.root}/../scripts/install-windows-updates.ps1"
    timeout           = "2h"
  }

  provisioner "windows-restart" {
    restart_timeout = "1h"
  }

  provisioner "powershell" {
    environment_vars  = concat(local.windows_update_environment, ["CAPWIN_WINDOWS_UPDATE_MODE=verify"])
    elevated_user     = "packer"
    elevated_password = build.Password
    script            = "${local.root}/../scripts/install-windows-updates.ps1"
    timeout           = "1h"
  }

  provisioner "powershell" {
    script = "${local.root}/../scripts/configure-openssh.ps1"
  }

  # The directory the uploads go to.
  provisioner "powershell" {
    inline = ["New-Item -ItemType Directory -Force -Path '${local.staging}' | Out-Null"]
  }

  provisioner "file" {
    sources = [
      "${local.root}/../files/cloudbase-init/azure/cloudbase-init.conf",
      "${local.root}/../files/cloudbase-init/azure/cloudbase-init-unattend.conf",
      "${local.root}/../scripts/capwin-first-boot.ps1",
      "${local.root}/../scripts/capwin-specialize.ps1",
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
    script = "${local.root}/../scripts/install-cloudbase-init.ps1"
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
    script = "${local.root}/../scripts/install-node-bundle.ps1"
  }

  provisioner "powershell" {
    script = "${local.root}/../scripts/prepull-pause-image.ps1"
  }

  # The clock's source.
  provisioner "powershell" {
    environment_vars = [
      "CAPWIN_PLATFORM=azure",
      "CAPWIN_NTP_SERVERS=${join(" ", var.ntp_servers)}",
    ]
    script = "${local.root}/../scripts/configure-time.ps1"
  }

  provisioner "powershell" {
    environment_vars = [
      "CAPWIN_PLATFORM=azure",
      "CAPWIN_STAGING=${local.staging}",
      "CAPWIN_BUILD_ACCOUNT=packer",
    ]
    script = "${local.root}/../scripts/finalize-image.ps1"
  }

  # Last: generalize with cloudbase-init's Unattend.xml, in the sequence the
  # azure-arm builder documents; it then captures the VM.
  provisioner "powershell" {
    script = "${local.root}/../scripts/sysprep-azure.ps1"
  }
}
