package kernels

import "runtime"

// octave_last_error is thread-local: a call and the read of its message must run on one OS
// thread.
func lockThread()   { runtime.LockOSThread() }
func unlockThread() { runtime.UnlockOSThread() }
