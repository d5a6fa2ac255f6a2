package windows

// The security descriptor of this file is a string, which builds, and is
// checked, on any OS; fs.go hands it to Windows.

// privateSDDL grants full control to SYSTEM (SY) and BUILTIN\Administrators
// (BA) and nobody else; P protects the DACL from the ACEs its parent
// directory would otherwise pass on.
const privateSDDL = "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"
