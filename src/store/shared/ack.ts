/**
 * When a write's caller hears back: `durable` once it is on disk (every API write), `visible` once
 * its transaction has committed (the run workers' own progress: a run that a stop interrupts is
 * finished as failed at the next start whatever it wrote, and the WAL keeps commit order, so what
 * survives a power loss is always a prefix of what committed — never a run's end without the
 * writes before it).
 */
export type Ack = 'durable' | 'visible';
