// Package repocheck holds checks over the repository's own files rather than any package's
// behaviour: that nothing a user reads points outside the repository, and that the
// section citations of the specifications in docs/ (docs/model.md §3.2 and the like) name
// sections that exist, that every relative Markdown link names a file that exists and
// its #anchor a heading there, that make fuzz runs every fuzz target and
// docs/reliability.md's table and the README's count list them all, and that packages
// import only packages on lower floors. Its tests are the whole of it.
package repocheck
