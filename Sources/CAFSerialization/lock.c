/* cafs_lock: mutexes that survive fork() (see cafs_private.h). */
#include "cafs_private.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

struct cafs_lock {
    pthread_mutex_t mutex;
    struct cafs_lock *prev, *next;
};

/* The registry: every live lock, on a circular list around `registry_head`. */
static pthread_mutex_t registry_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct cafs_lock registry_head = {PTHREAD_MUTEX_INITIALIZER, &registry_head, &registry_head};
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t global_mutex = PTHREAD_MUTEX_INITIALIZER;
static unsigned long fork_count;

/* Before fork(): the registry, then every lock (a thread holding one finishes its short
 * critical section first; none takes the registry while holding a lock). */
static void before_fork(void) {
    pthread_mutex_lock(&global_mutex);
    pthread_mutex_lock(&registry_mutex);
    for (struct cafs_lock *l = registry_head.next; l != &registry_head; l = l->next)
        pthread_mutex_lock(&l->mutex);
}

/* After fork(), in the parent and in the child (whose only thread is the one that forked
 * and so owns every lock): everything is released in the reverse order. */
static void after_fork(void) {
    for (struct cafs_lock *l = registry_head.prev; l != &registry_head; l = l->prev)
        pthread_mutex_unlock(&l->mutex);
    pthread_mutex_unlock(&registry_mutex);
    pthread_mutex_unlock(&global_mutex);
}

static void after_fork_child(void) {
    fork_count++;
    after_fork();
}

static void install_atfork(void) {
    pthread_atfork(before_fork, after_fork, after_fork_child);
}

void cafs_global_acquire(void) {
    pthread_once(&atfork_once, install_atfork);
    pthread_mutex_lock(&global_mutex);
}

void cafs_global_release(void) { pthread_mutex_unlock(&global_mutex); }

void *cafs_slot_load(void *const *slot) { return __atomic_load_n(slot, __ATOMIC_ACQUIRE); }

void *cafs_slot_publish(void **slot, void *candidate) {
    void *expected = NULL;
    if (__atomic_compare_exchange_n(slot, &expected, candidate, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return candidate;
    return expected;
}

void cafs_slot_store(void **slot, void *value) { __atomic_store_n(slot, value, __ATOMIC_RELEASE); }

cafs_lock *cafs_lock_new(void) {
    pthread_once(&atfork_once, install_atfork);
    struct cafs_lock *l = malloc(sizeof *l);
    if (!l) return NULL;
    if (pthread_mutex_init(&l->mutex, NULL) != 0) {
        free(l);
        return NULL;
    }
    pthread_mutex_lock(&registry_mutex);
    l->next = &registry_head;
    l->prev = registry_head.prev;
    registry_head.prev->next = l;
    registry_head.prev = l;
    pthread_mutex_unlock(&registry_mutex);
    return l;
}

void cafs_lock_free(cafs_lock *l) {
    if (!l) return;
    pthread_mutex_lock(&registry_mutex);
    l->prev->next = l->next;
    l->next->prev = l->prev;
    pthread_mutex_unlock(&registry_mutex);
    pthread_mutex_destroy(&l->mutex);
    free(l);
}

void cafs_lock_acquire(cafs_lock *l) { pthread_mutex_lock(&l->mutex); }

void cafs_lock_release(cafs_lock *l) { pthread_mutex_unlock(&l->mutex); }

unsigned long cafs_fork_count(void) { return fork_count; }
