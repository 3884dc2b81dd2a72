/**
 * The epoch clock. Epoch numbers count from a fixed genesis instant:
 *
 *   currentEpoch = floor((now - genesis) / epochLength) + advancedEpochs
 *
 * Advancing the clock moves the whole emulated history into the past instead of moving "now"
 * into the future: an instant recorded on the virtual clock (`virtualNow = now + advanced *
 * epochLength`) is reported as `virtual - advanced * epochLength`. So after advancing N epochs
 * every `expiresAt` and `createdAt` the emulator reports is N epochs earlier in real time, and a
 * client comparing `expiresAt` with its own `Date.now()` sees exactly what the emulator decides:
 * a file is expired if and only if `Date.now() >= expiresAt`.
 */
export class EpochClock {
  private genesis: number;
  private advanced: number;
  readonly epochMs: number;
  private readonly now: () => number;

  constructor(options: { genesisMs: number; epochSeconds: number; advancedEpochs: number; now?: () => number }) {
    if (!(Number.isFinite(options.epochSeconds) && options.epochSeconds > 0)) {
      throw new Error(`epochSeconds must be a positive number, got ${options.epochSeconds}`);
    }
    this.genesis = options.genesisMs;
    this.epochMs = options.epochSeconds * 1000;
    this.advanced = options.advancedEpochs;
    this.now = options.now ?? Date.now;
  }

  get genesisMs(): number {
    return this.genesis;
  }

  get advancedEpochs(): number {
    return this.advanced;
  }

  get epochSeconds(): number {
    return this.epochMs / 1000;
  }

  /** Real time shifted by the advanced epochs: the timeline stored instants live on. */
  virtualNow(): number {
    return this.now() + this.advanced * this.epochMs;
  }

  currentEpoch(): number {
    return Math.floor((this.virtualNow() - this.genesis) / this.epochMs);
  }

  /** Reports a stored virtual instant as the real wall time a client should see now. */
  toWall(virtualMs: number): Date {
    return new Date(virtualMs - this.advanced * this.epochMs);
  }

  /** The real wall time at which `epoch` begins (for an end epoch: when the file expires). */
  epochStart(epoch: number): Date {
    return this.toWall(this.genesis + epoch * this.epochMs);
  }

  advance(epochs: number): void {
    this.advanced += epochs;
  }

  /** Starts over at the current real time with nothing advanced. */
  restart(): void {
    this.genesis = this.now();
    this.advanced = 0;
  }
}
