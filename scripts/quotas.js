// The request quotas (RATE_LIMIT_*) of a service that a load script starts: on, so that their cost
// is part of what is measured, but too high to refuse any load the scripts make.
'use strict';

const QUOTAS_ABOVE_ANY_LOAD = Object.freeze(
  Object.fromEntries(
    ['WORKSPACE', 'CALLER', 'WORKSPACE_RUNS', 'CALLER_RUNS', 'WORKSPACE_VALIDATIONS', 'CALLER_VALIDATIONS'].map((name) => [`RATE_LIMIT_${name}`, '1000000000']),
  ),
);

module.exports = { QUOTAS_ABOVE_ANY_LOAD };
