/* A lost device on demand, for tests (FFNRT_INJECT_DEVICE_FAILURE:
 * device_faults.c says what fails and how). */
#ifndef FFNRT_DEVICE_FAULTS_H
#define FFNRT_DEVICE_FAULTS_H

#include "backend/backend.h"

/* For a device just opened through ops: *out is ops, or, where
 * FFNRT_INJECT_DEVICE_FAILURE asks it, a table over ops whose memory and
 * queue calls on dev fail from the Nth on (its close forgets dev). An
 * unreadable value or too many such devices at once is an error (ops
 * and dev untouched: the caller closes dev). */
ffnrt_status ffnrt_device_faults_wrap(const ffnrt_backend_ops *ops, ffnrt_bdevice *dev,
                                      const ffnrt_backend_ops **out, ffnrt_error *err);

#endif
