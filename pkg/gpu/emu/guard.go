package emu

// The guard zones' fills (SetGuardFill). Each fill shows one kind of access past a
// buffer and hides another: a read of GuardNaN bytes is a NaN as a float or a double (an
// int reads −1), which the parity tests see in any result the read reaches, but a write of
// all-ones bytes (an int −1, a mask) leaves the zone as it was; GuardMark shows every
// write but that of its own pattern, while a read of it (about −2.9e−16 as a float) mostly
// vanishes in a sum.
const (
	GuardNaN  byte = 0xFF
	GuardMark byte = 0xA5
)
