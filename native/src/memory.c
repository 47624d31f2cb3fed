/* malloc_trim(0): gives the kernel back the free pages of every malloc arena (glibc).
 *
 * Why: V8 compiles hot functions on a worker thread, and each compile job's zone
 * memory, freed when the job ends, stays in that thread's malloc arena: glibc returns
 * by itself only the top of a heap, and a few live chunks above the freed ones keep
 * it all. On Node 24 a few hundred status requests leave some 7 MB so (BENCHMARKS.md,
 * "### 10"). malloc_trim(0) madvises every free page of every arena away; the chunks
 * stay free, their pages come back zero-filled when next used. Returns glibc's answer,
 * true when it gave any page back (it does whenever it madvised one), false when none,
 * and null where the C library is not glibc (nothing done). */
#include <stdlib.h> /* defines __GLIBC__ where the C library is glibc */

#include "memory.h"

#include <stdbool.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

napi_value malloc_trim_all(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value result;
#if defined(__GLIBC__)
  if (napi_get_boolean(env, malloc_trim(0) != 0, &result) != napi_ok) return NULL;
#else
  if (napi_get_null(env, &result) != napi_ok) return NULL;
#endif
  return result;
}
