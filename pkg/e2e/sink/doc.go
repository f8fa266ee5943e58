// Package sink owns the receivers that see events leave an event-driven
// SUT and report each to an e2e.Receiver (in a run, the e2e.Tracker): an
// HTTP endpoint that events are delivered to (HTTP, as CloudEvents or any
// POST carrying the ID), a Redis list or stream consumer (Redis), and a
// NATS subscriber (NATS). It finds the correlation ID in what arrives and
// leaves parsing and scoring it to package e2e.
//
// None of these sinks can prove that an event it has not seen will never
// come, so none proves loss (e2e.Prover): what is unseen at the end of a
// run's drain is pending.
//
// It is the only package of replay that links the Redis and NATS clients:
// stamping requests (transform) and reporting (report) need only e2e.
package sink
