package engine

// Resolved reports whether the engine has resolved every selector (a lazy
// engine after finish): tests check that the lazy path was the one taken.
func (e *Engine) Resolved() bool { return e.resolved() }
