// Package ptr turns optional values, which the API and its generated models
// carry as pointers, into plain ones.
package ptr

// Value is what p points to, or the zero value when p is nil.
func Value[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// To returns a pointer to a copy of v.
func To[T any](v T) *T { return &v }
