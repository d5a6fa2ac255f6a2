# capwin's Windows Server node image for vSphere: a VM template that capwin
# clones for a Windows HybridMachine (spec.vsphere.template, the flavors'
# VSPHERE_WINDOWS_TEMPLATE).
#
# Two sources make the same image; build one of them with -only:
#   packer build -only 'vsphere-iso.windows' ...    Windows installed from the ISO
#   packer build -only 'vsphere-clone.windows' ...  cloned from a base template
# See docs/images.md.

source "vsphere-iso" "windows" {
  vcenter_server      = var.vcenter_server
  username            = var.vcenter_username
  password            = var.vcenter_password
  insecure_connection = var.vcenter_insecure
  datacenter          = var.datacenter
  cluster             = var.cluster
  host                = var.esxi_host
  resource_pool       = var.resource_pool
  datastore           = var.datastore
  folder              = var.folder
  vm_name             = local.template_name
  notes               = local.template_notes

  guest_os_type        = local.release.guest_os_type
  firmware             = "efi"
  CPUs                 = var.cpus
  RAM                  = var.memory_mib
  NestedHV             = var.hyperv
  disk_controller_type = ["lsilogic-sas"]
  storage {
    disk_size             = var.disk_gib * 1024
    disk_thin_provisioned = true
  }
  network_adapters {
    network      = var.network
    network_card = "vmxnet3"
  }

  # The Windows ISO, the VMware Tools ISO (vmxnet3 has no driver in Windows
  # itself) and a CD with the answer file and the first-logon script.
  iso_paths = [var.windows_iso_path, var.vmware_tools_iso_path]
  cd_label  = "CAPWIN"
  cd_files  = ["${local.root}/../scripts/vsphere-first-logon.ps1"]
  cd_content = {
    "autounattend.xml" = templatefile("${local.root}/autounattend.xml.pkrtpl", {
      admin_password = var.admin_password
      image_name     = var.windows_image_name != "" ? var.windows_image_name : local.release.image_name
      product_key    = var.product_key
    })
  }
  remove_cdrom = true
  # UEFI boots the Windows ISO only after a key press.
  boot_wait    = "3s"
  boot_command = ["<spacebar><wait><spacebar>"]
  boot_order   = "disk,cdrom"

  communicator    = "winrm"
  winrm_username  = var.winrm_username
  winrm_password  = var.admin_password
  winrm_timeout   = "2h"
  ip_wait_timeout = "2h"

  # sysprep with cloudbase-init's answer file powers the VM off; Packer then
  # turns it into the template.
  shutdown_command    = local.sysprep_command
  shutdown_timeout    = "30m"
  convert_to_template = true
}

source "vsphere-clone" "windows" {
  vcenter_server      = var.vcenter_server
  username            = var.vcenter_username
  password            = var.vcenter_password
  insecure_connection = var.vcenter_insecure
  datacenter          = var.datacenter
  cluster             = var.cluster
  host                = var.esxi_host
  resource_pool       = var.resource_pool
  datastore           = var.datastore
  folder              = var.folder
  vm_name             = local.template_name
  notes               = local.template_notes

  template = var.base_template
  network  = var.network
  CPUs     = var.cpus
  RAM      = var.memory_mib
  NestedHV = var.hyperv

  communicator    = "winrm"
  winrm_username  = var.winrm_username
  winrm_password  = var.admin_password
  winrm_timeout   = "30m"
  ip_wait_timeout = "30m"

  shutdown_command    = local.sysprep_command
  shutdown_timeout    = "30m"
  convert_to_template = true
}

locals {
  # What the template says of itself in vCenter.
  template_notes = "capwin Windows node: Windows Server ${var.windows_release} (${local.release.container_release}), Kubernetes ${var.kubernetes_version}, bundle sha256 ${local.bundle_sha256}"
  # The MSI's Unattend.xml skips the OOBE screens and runs cloudbase-init with
  # cloudbase-init-unattend.conf in the specialize pass.
  sysprep_command = "C:\\Windows\\System32\\Sysprep\\sysprep.exe /generalize /oobe /shutdown /quiet /mode:vm /unattend:\"C:\\Program Files\\Cloudbase Solutions\\Cloudbase-Init\\conf\\Unattend.xml\""
}

build {
  sources = ["source.vsphere-iso.windows", "source.vsphere-clone.windows"]

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
    elevated_user     = var.winrm_username
    elevated_password = var.admin_password
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
    elevated_user     = var.winrm_username
    elevated_password = var.admin_password
    script            = "${local.root}/../scripts/install-windows-updates.ps1"
    timeout           = "2h"
  }

  provisioner "windows-restart" {
    restart_timeout = "1h"
  }

  provisioner "powershell" {
    environment_vars  = concat(local.windows_update_environment, ["CAPWIN_WINDOWS_UPDATE_MODE=install"])
    elevated_user     = var.winrm_username
    elevated_password = var.admin_password
    script            = "${local.root}/../scripts/install-windows-updates.ps1"
    timeout           = "2h"
  }

  provisioner "windows-restart" {
    restart_timeout = "1h"
  }

  provisioner "powershell" {
    environment_vars  = concat(local.windows_update_environment, ["CAPWIN_WINDOWS_UPDATE_MODE=install"])
    elevated_user     = var.winrm_username
    elevated_password = var.admin_password
    script            = "${local.root}/../scripts/install-windows-updates.ps1"
    timeout           = "2h"
  }

  provisioner "windows-restart" {
    restart_timeout = "1h"
  }

  provisioner "powershell" {
    environment_vars  = concat(local.windows_update_environment, ["CAPWIN_WINDOWS_UPDATE_MODE=install"])
    elevated_user     = var.winrm_username
    elevated_password = var.admin_password
    script            = "${local.root}/../scripts/install-windows-updates.ps1"
    timeout           = "2h"
  }

  provisioner "windows-restart" {
    restart_timeout = "1h"
  }

  provisioner "powershell" {
    environment_vars  = concat(local.windows_update_environment, ["CAPWIN_WINDOWS_UPDATE_MODE=install"])
    elevated_user     = var.winrm_username
    elevated_password = var.admin_password
    script            = "${local.root}/../scripts/install-windows-updates.ps1"
    timeout           = "2h"
  }

  provisioner "windows-restart" {
    restart_timeout = "1h"
  }

  provisioner "powershell" {
    environment_vars  = concat(local.windows_update_environment, ["CAPWIN_WINDOWS_UPDATE_MODE=verify"])
    elevated_user     = var.winrm_username
    elevated_password = var.admin_password
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
      "${local.root}/../files/cloudbase-init/vsphere/cloudbase-init-unattend.conf",
      "${local.root}/../files/vmware-tools/tools.conf",
      "${local.root}/../scripts/capwin-first-boot.ps1",
      "${local.root}/../scripts/capwin-specialize.ps1",
    ]
    destination = "${local.staging}/"
  }

  # cloudbase-init's configuration, which depends on ntp_servers.
  provisioner "file" {
    content = templatefile("${local.root}/../files/cloudbase-init/vsphere/cloudbase-init.conf.pkrtpl", {
      ntp_use_dhcp_config = length(var.ntp_servers) == 0
    })
    destination = "${local.staging}/cloudbase-init.conf"
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

  provisioner "powershell" {
    environment_vars = ["CAPWIN_STAGING=${local.staging}"]
    script           = "${local.root}/../scripts/configure-vmware-tools.ps1"
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
      "CAPWIN_PLATFORM=vsphere",
      "CAPWIN_NTP_SERVERS=${join(" ", var.ntp_servers)}",
    ]
    script = "${local.root}/../scripts/configure-time.ps1"
  }

  provisioner "powershell" {
    environment_vars = [
      "CAPWIN_PLATFORM=vsphere",
      "CAPWIN_STAGING=${local.staging}",
      "CAPWIN_BUILD_ACCOUNT=${var.winrm_username}",
    ]
    script = "${local.root}/../scripts/finalize-image.ps1"
  }
}
