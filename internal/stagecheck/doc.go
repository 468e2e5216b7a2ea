// Package stagecheck holds checks over the five stage binaries as a user meets them:
// every stage's and command's --help (defaults printed once, required flags marked and
// really required, no COMMANDS section without commands). It builds the stages from this
// checkout; its tests are the whole of it.
package stagecheck
