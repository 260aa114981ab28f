/* cpu_pool.c — a fixed pool of worker threads taking chunks of workgroups from an atomic
 * counter. One job at a time (launches on the CPU are in order); the caller joins in.
 *
 * A decode step is a few hundred launches of microseconds each, back to back. Sleeping on a
 * condition variable between them costs a wake-up each (tens of microseconds on a VM), so a
 * worker first spins for SPIN_NS on the job counter, and so does the caller on the join; only
 * past that do they sleep. */
#include "cpu_pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#define SPIN_NS 200000 /* 0.2 ms: longer than the gaps between a step's launches */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Spins until done(arg) or SPIN_NS have passed; returns done(arg). */
static bool spin_until(bool (*done)(const void *), const void *arg)
{
	uint64_t t0 = now_ns();
	for (unsigned i = 1;; i++) {
		if (done(arg))
			return true;
		cpu_relax();
		if ((i & 255) == 0 && now_ns() - t0 > SPIN_NS)
			return done(arg);
	}
}

struct job {
	xpu_cpu_fn fn;
	const struct xpu_karg *args;
	struct xpu_cpu_launch launch;
	uint64_t ngroups, chunk;
	atomic_uint_fast64_t next;
	atomic_int pending; /* workers still inside this job */
};

static struct job job;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t run_lock = PTHREAD_MUTEX_INITIALIZER; /* one launch at a time */
static atomic_uint_fast64_t generation; /* written under lock, read without it while spinning */
static int nworkers; /* threads besides the caller */

static void work(int worker)
{
	struct xpu_cpu_launch l = job.launch;
	l.worker = worker;
	for (;;) {
		uint64_t g0 = atomic_fetch_add(&job.next, job.chunk);
		if (g0 >= job.ngroups)
			break;
		uint64_t g1 = g0 + job.chunk < job.ngroups ? g0 + job.chunk : job.ngroups;
		job.fn(job.args, g0, g1, &l);
	}
}

static bool moved_on(const void *seen)
{
	return atomic_load(&generation) != *(const uint64_t *)seen;
}

static bool joined(const void *unused)
{
	(void)unused;
	return atomic_load(&job.pending) == 0;
}

static void *worker_main(void *arg)
{
	int id = (int)(intptr_t)arg;
	uint64_t seen = 0;
	for (;;) {
		if (!spin_until(moved_on, &seen)) {
			pthread_mutex_lock(&lock);
			while (atomic_load(&generation) == seen)
				pthread_cond_wait(&wake, &lock);
			pthread_mutex_unlock(&lock);
		}
		seen = atomic_load(&generation);
		work(id);
		if (atomic_fetch_sub(&job.pending, 1) == 1) {
			pthread_mutex_lock(&lock);
			pthread_cond_signal(&done);
			pthread_mutex_unlock(&lock);
		}
	}
	return NULL;
}

int xpu_pool_start(int workers)
{
	pthread_mutex_lock(&lock);
	int rc = 0;
	if (nworkers == 0) {
		for (int i = 1; i < workers; i++) {
			pthread_t t;
			pthread_attr_t attr;
			pthread_attr_init(&attr);
			pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
			if (pthread_create(&t, &attr, worker_main, (void *)(intptr_t)i)) {
				rc = xpu_fail("cannot start CPU worker %d", i);
				break;
			}
			nworkers++;
		}
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

void xpu_pool_run(xpu_cpu_fn fn, const struct xpu_karg *args, uint64_t ngroups,
		  const struct xpu_cpu_launch *launch)
{
	struct xpu_cpu_launch l = *launch;
	if (nworkers == 0 || ngroups == 1) {
		l.worker = 0;
		fn(args, 0, ngroups, &l);
		return;
	}
	pthread_mutex_lock(&run_lock);
	uint64_t parts = (uint64_t)(nworkers + 1) * 4;
	job.fn = fn;
	job.args = args;
	job.launch = l;
	job.ngroups = ngroups;
	job.chunk = ngroups / parts ? ngroups / parts : 1;
	atomic_store(&job.next, 0);
	atomic_store(&job.pending, nworkers);
	pthread_mutex_lock(&lock);
	atomic_fetch_add(&generation, 1);
	pthread_cond_broadcast(&wake);
	pthread_mutex_unlock(&lock);
	work(0);
	if (!spin_until(joined, NULL)) {
		pthread_mutex_lock(&lock);
		while (atomic_load(&job.pending) > 0)
			pthread_cond_wait(&done, &lock);
		pthread_mutex_unlock(&lock);
	}
	pthread_mutex_unlock(&run_lock);
}
