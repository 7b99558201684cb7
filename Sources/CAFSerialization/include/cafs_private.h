/*
 * Private helpers of libafserialization, written in C (not installed; not exported: the
 * version script exports afs_* only).
 *
 * cafs_lock — a mutex that survives fork(). Swift's Synchronization.Mutex held by another
 * thread at fork() stays held in the child, which then aborts ("Unknown error occurred
 * while attempting to acquire a Mutex"). Every cafs_lock is on a registry; a
 * pthread_atfork handler takes the registry and every lock before fork() (so no lock is
 * held by a thread that will not exist in the child and no guarded state is half-changed)
 * and releases them after it, in the parent and in the child.
 *
 * Rule for users: never create or free a cafs_lock, and never fork, while holding one.
 */
#ifndef CAFS_PRIVATE_H
#define CAFS_PRIVATE_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cafs_lock cafs_lock;

/** A new unlocked lock on the registry; NULL when out of memory. */
cafs_lock *cafs_lock_new(void);
/** Takes the lock off the registry and frees it. It must not be held. NULL is ignored. */
void cafs_lock_free(cafs_lock *lock);
void cafs_lock_acquire(cafs_lock *lock);
void cafs_lock_release(cafs_lock *lock);
/** How many times this process went through fork() since the library was loaded (for
 *  tests: the child sees the parent's count plus one). */
unsigned long cafs_fork_count(void);

/** A process-wide lock (fork-safe like the others) for rare slow paths: materialising a
 *  value tree built top-down before it is read. */
void cafs_global_acquire(void);
void cafs_global_release(void);

/*
 * Slots published once, read by many threads (the lazy caches behind the value getters):
 * a load with acquire order, and a compare-and-swap from NULL with release order that
 * returns what the slot holds afterwards (the candidate, or the pointer another thread
 * published first).
 */
void *cafs_slot_load(void *const *slot);
void *cafs_slot_publish(void **slot, void *candidate);
/* Stores `value` into `*slot` with release ordering (the parsed documents' view registry
 * clears a slot with it). */
void cafs_slot_store(void **slot, void *value);

/* SHA-256 with the x86 SHA extensions (sha256_x86.c): whether the CPU has them, and the
 * compression of `blocks` 64-byte blocks into `state` (H0..H7), as FIPS 180-4 defines it. */
#include <stddef.h>
#include <stdint.h>
int cafs_sha256_hw_available(void);
void cafs_sha256_hw_blocks(uint32_t state[8], const uint8_t *data, size_t blocks);

#ifdef __cplusplus
}
#endif

#endif /* CAFS_PRIVATE_H */
