// The C interface of the emulator, called from emu.go.
#ifndef ROCONE_EMU_API_H
#define ROCONE_EMU_API_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

int emu_num_kernels(void);
const char* emu_kernel_name(int i);
const char* emu_kernel_params(int i);

// Runs kernel i over grid × block with the packed arguments, using up to `workers` OS
// threads for the blocks, its cp.async copies landing late (lateCopies ≠ 0: as late as
// their waits allow) or at once, each block's threads run between barriers in index
// order or, reverseThreads ≠ 0, last to first. ranges holds the nranges live device
// allocations as [start, end) pairs sorted by start (emu_require_inside's). Returns 0,
// or -1 with a message in err.
int emu_launch(int i, const unsigned* grid, const unsigned* block, const uint64_t* args, const uint64_t* ranges,
               int nranges, int workers, int lateCopies, int reverseThreads, char* err, int errlen);

#ifdef __cplusplus
}
#endif
#endif
