// Package stagecheck holds checks over the five stage binaries as a user meets them:
// every stage's and command's --help (defaults printed once, required flags marked and
// really required, no COMMANDS section without commands), the README's stage sections
// against that help (every flag in its command's synopsis and every synopsis flag in the
// help, with the help's placeholders), and the README's five-minute tour, run as written
// against the stages built from this checkout, with what the README says of each command's
// output checked. Its tests are the whole of it.
package stagecheck
