// Package outfile is how every stage writes its outputs, checks them before it starts,
// and cleans up after an interruption. It is the one place that decides what writing to
// a path means, so that every artifact, plot and checkpoint behaves the same:
//
//   - "-" is stdout, written as a stream.
//   - A new path or an existing regular file is written atomically: to a hidden temporary
//     file .NAME.tmp-NNNN in the destination's directory, renamed over the destination
//     only when complete (Commit), and removed on failure (Abort) or on SIGINT/SIGTERM.
//     A symbolic link is followed: the file at the end of its chain is replaced and the
//     link stays a link.
//   - An existing character device, FIFO, or open descriptor (/dev/fd/N, /dev/stdout,
//     bash's >(cmd)) is opened and written in place, as any Unix tool does; write and
//     close errors are reported (so -o /dev/full fails). Such a file is never replaced:
//     rename would swap /dev/null for a regular file, or leave a FIFO's reader waiting
//     forever. A directory, a block device or a socket that is not an open descriptor is
//     an error.
//
// Check runs before any work: it refuses an output that is the same file as one of the
// stage's inputs (by device and inode, so ./x, hard links and symbolic links are caught)
// or as another output, checks that every output can be written, and removes temporary
// files that a killed run of an earlier process left next to an output.
//
// Main runs a stage's command line with SIGINT and SIGTERM handled: the temporary files
// in flight are removed and the process exits with 128+signal. MainGraceful first cancels
// the run's context, for a stage that stops cleanly at its next step (train), and acts
// like Main on a second signal.
package outfile
