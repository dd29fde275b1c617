/* unit_gate.c: the only thread's plain sections and a second thread's gate (freelist.c, THE
 * ONLY THREAD). A second thread must wait at the gate while the only thread is inside a plain
 * section (a nested one too), pass once the last one ends, and leave no later section plain.
 * Then the only thread's flushes push with cas16 again, and every object still comes back
 * once. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "freelist.h"

static atomic_int passed;

static void *second(void *arg)
{
	(void)arg;
	sm_gate();
	atomic_store(&passed, 1);
	return NULL;
}

static void nap(long ms)
{
	struct timespec t = {.tv_sec = 0, .tv_nsec = ms * 1000000};
	nanosleep(&t, NULL);
}

/* n objects of size bytes, freed in shuffled order (flushes through sm_free_array), then taken
 * again: each address once. */
static void churn(size_t size, uint32_t n)
{
	void **p = malloc(n * sizeof *p), **q = malloc(n * sizeof *q);
	CHECK(p && q, "no memory");
	for (uint32_t i = 0; i < n; i++) {
		CHECK(p[i] = malloc(size), "malloc");
		*(uint32_t *)p[i] = i;
	}
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)rand() % (i + 1);
		void *t = p[i];
		p[i] = p[j];
		p[j] = t;
	}
	for (uint32_t i = 0; i < n; i++)
		free(p[i]);
	for (uint32_t i = 0; i < n; i++) {
		CHECK(q[i] = malloc(size), "malloc again");
		*(uint32_t *)q[i] = 0xfeedu;
	}
	/* all distinct: each one's mark survives the others' */
	for (uint32_t i = 0; i < n; i++) {
		CHECK(*(uint32_t *)q[i] == 0xfeedu, "object %u handed out twice", i);
		*(uint32_t *)q[i] = i;
	}
	for (uint32_t i = 0; i < n; i++) {
		CHECK(*(uint32_t *)q[i] == i, "object %u handed out twice", i);
		free(q[i]);
	}
	free(p);
	free(q);
}

int main(void)
{
	churn(48, 50000); /* the only thread: plain pushes */
	CHECK(sm_gate_state == GATE_ONLY, "the first thread is not the only one (%d)", sm_gate_state);
	CHECK(sm_plain_begin(), "no plain section for the only thread");
	CHECK(sm_plain_begin(), "no nested plain section");
	pthread_t t;
	CHECK(!pthread_create(&t, NULL, second, NULL), "pthread_create");
	nap(100);
	CHECK(!atomic_load(&passed), "a second thread passed the gate inside a plain section");
	sm_plain_end();
	nap(100);
	CHECK(!atomic_load(&passed), "a second thread passed the gate inside the outer section");
	sm_plain_end();
	CHECK(!pthread_join(t, NULL), "pthread_join");
	CHECK(atomic_load(&passed), "the second thread never passed");
	CHECK(!sm_plain_begin(), "a plain section after a second thread came");
	churn(48, 50000); /* with cas16 again */
	churn(256, 20000);
	printf("unit_gate: all checks passed\n");
	return 0;
}
