// Package sysmem tells how much memory the machine has, so that a stage can refuse at once
// a size that cannot fit rather than die of a fatal out-of-memory after its work began.
package sysmem

import (
	"fmt"
	"os"
	"strings"
)

// Unknown is the limit assumed where the machine's memory cannot be read: 1 TiB.
const Unknown = 1 << 40

// Physical is the machine's memory in bytes (Linux's MemTotal), or Unknown where
// /proc/meminfo cannot be read.
func Physical() float64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return Unknown
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			var kb float64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%f kB", &kb); err == nil && kb > 0 {
				return kb * 1024
			}
		}
	}
	return Unknown
}
