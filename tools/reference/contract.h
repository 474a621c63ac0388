/* The parameters the accuracy contract is stated for, shared by the tests
 * and `ffnrt check`: leaky/PReLU slope, ELU alpha, swish beta. */
#ifndef FFNRT_TESTS_CONTRACT_H
#define FFNRT_TESTS_CONTRACT_H

#include "ffnrt.h"

#define LEAKY_SLOPE 0.1f
#define ELU_ALPHA 1.5f
#define SWISH_BETA 1.7f

/* The alpha an activation runs with under the contract. */
static inline float contract_alpha(ffnrt_activation act) { return act == FFNRT_ACT_ELU ? ELU_ALPHA : LEAKY_SLOPE; }

#endif
