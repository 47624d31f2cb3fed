/* malloc_trim(0): gives the kernel back the free pages of every malloc arena (glibc),
 * on a thread of libuv's pool, so that the event loop never waits for it.
 *
 * Why: V8 compiles hot functions on a worker thread, and each compile job's zone
 * memory, freed when the job ends, stays in that thread's malloc arena: glibc returns
 * by itself only the top of a heap, and a few live chunks above the freed ones keep
 * it all. On Node 24 a few hundred status requests leave some 7 MB so (docs/benchmarks.md,
 * "### 10"). malloc_trim(0) madvises every free page of every arena away; the chunks
 * stay free, their pages come back zero-filled when next used. It takes each arena's
 * lock in turn: a thread that allocates from that arena meanwhile waits for it, and
 * from a pool thread the main thread only ever waits for one arena's walk, not all.
 *
 * mallocTrim() returns a promise of glibc's answer: true when it gave any page back (it
 * does whenever it madvised one), false when none; null where the C library is not
 * glibc (nothing done). */
#include <stdlib.h> /* defines __GLIBC__ where the C library is glibc */

#include "memory.h"

#include <stdbool.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "errors.h"

struct trim_work {
  napi_async_work work;
  napi_deferred deferred;
  int released;
};

static void trim_execute(napi_env env, void *data) {
  (void)env;
  struct trim_work *w = data;
#if defined(__GLIBC__)
  w->released = malloc_trim(0);
#else
  w->released = -1;
#endif
}

/* Rejects d with an Error saying message (undefined if even that cannot be made): a
 * promise of ours is always settled. */
static void reject(napi_env env, napi_deferred d, const char *message) {
  napi_value text, error = NULL;
  if (napi_create_string_utf8(env, message, NAPI_AUTO_LENGTH, &text) != napi_ok ||
      napi_create_error(env, NULL, text, &error) != napi_ok)
    napi_get_undefined(env, &error);
  napi_reject_deferred(env, d, error);
}

static void trim_complete(napi_env env, napi_status status, void *data) {
  struct trim_work *w = data;
  napi_value result = NULL;
  if (status != napi_ok) {
    reject(env, w->deferred, "malloc_trim did not run");
  } else {
    napi_status got = w->released < 0 ? napi_get_null(env, &result) : napi_get_boolean(env, w->released != 0, &result);
    if (got != napi_ok || napi_resolve_deferred(env, w->deferred, result) != napi_ok)
      reject(env, w->deferred, "malloc_trim's answer could not be given");
  }
  napi_delete_async_work(env, w->work);
  free(w);
}

napi_value malloc_trim_all(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value promise, name;
  napi_deferred deferred;
  NAPI_CALL(env, napi_create_promise(env, &deferred, &promise));
  /* From here on every failure rejects the promise: it is always settled. */
  struct trim_work *w = calloc(1, sizeof *w);
  if (w == NULL || napi_create_string_utf8(env, "gwmode:malloc_trim", NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_create_async_work(env, NULL, name, trim_execute, trim_complete, w, &w->work) != napi_ok) {
    free(w);
    reject(env, deferred, "malloc_trim could not be queued");
    return promise;
  }
  w->deferred = deferred;
  if (napi_queue_async_work(env, w->work) != napi_ok) {
    napi_delete_async_work(env, w->work);
    free(w);
    reject(env, deferred, "malloc_trim could not be queued");
  }
  return promise;
}
