/**
 * A fixed-capacity ring of numbers: pushing past capacity drops the oldest value, so a history
 * kept for hours uses the same memory as one kept for a minute.
 */
export class Ring {
  private readonly buffer: Float64Array;
  private start = 0;
  private length = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError("capacity must be >= 1");
    this.buffer = new Float64Array(capacity);
  }

  get size(): number {
    return this.length;
  }

  push(value: number): void {
    const end = (this.start + this.length) % this.capacity;
    this.buffer[end] = value;
    if (this.length < this.capacity) this.length += 1;
    else this.start = (this.start + 1) % this.capacity;
  }

  /** The value `i` places from the oldest (0) to the newest (size - 1). */
  at(i: number): number | undefined {
    if (i < 0 || i >= this.length) return undefined;
    return this.buffer[(this.start + i) % this.capacity];
  }

  last(): number | undefined {
    return this.at(this.length - 1);
  }

  clear(): void {
    this.start = 0;
    this.length = 0;
  }

  /** Oldest first, copied into `out` when given (reused between renders to avoid garbage). */
  toArray(out?: number[]): number[] {
    const result = out ?? [];
    result.length = this.length;
    for (let i = 0; i < this.length; i += 1) result[i] = this.buffer[(this.start + i) % this.capacity] ?? NaN;
    return result;
  }
}
