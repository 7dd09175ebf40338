package server

// Sweep runs a Router's idle sweep now (for tests with a fake clock).
func Sweep(rt *Router) { rt.pool.sweep() }
