// Package images holds the tests of the Windows node image definitions in
// images/: the Packer templates parse, name only declared variables and
// locals, copy only files that exist, list the Windows Server releases the
// node agent pins pause images for, and their PowerShell scripts pass the
// repository's syntax check. Packer itself does not run here.
package images
