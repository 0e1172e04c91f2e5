// SPDX-License-Identifier: BSD-3-Clause

// Leader.java: what a read of a leader election found (redlock_leader).
package io.redlock;

import java.util.Objects;

/**
 * The leader of an election as a majority of the nodes report it, or none.
 * Terms are fencing tokens: they grow from one leader to the next.
 */
public final class Leader {
  private final boolean present;
  private final long term;
  private final long revision;
  private final String value;

  public Leader(boolean present, long term, long revision, String value) {
    this.present = present;
    this.term = term;
    this.revision = revision;
    this.value = present ? value : null;
  }

  /** Parses the native line "present term revision value". */
  static Leader fromLine(String line) {
    String[] p = line.split(" ", 4);
    return new Leader(p[0].equals("1"), Long.parseUnsignedLong(p[1]), Long.parseUnsignedLong(p[2]),
                      p.length > 3 ? p[3] : "");
  }

  String toLine() {
    return (present ? "1 " : "0 ") + Long.toUnsignedString(term) + " " + Long.toUnsignedString(revision) + " "
        + (value == null ? "" : value);
  }

  /** True when a leader holds the election on a majority. */
  public boolean isPresent() { return present; }

  /** The leader's term; with no leader, the last term a majority recorded (0: never any). */
  public long term() { return term; }

  /** 1 when elected, + 1 per proclaim; 0 with no leader. */
  public long revision() { return revision; }

  /** The leader's value, or null with no leader. */
  public String value() { return value; }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof Leader))
      return false;
    Leader l = (Leader) o;
    return present == l.present && term == l.term && revision == l.revision && Objects.equals(value, l.value);
  }

  @Override
  public int hashCode() { return Objects.hash(present, term, revision, value); }

  @Override
  public String toString() {
    return present ? "Leader[term=" + term + ", revision=" + revision + ", value=" + value + "]"
                   : "Leader[none, term=" + term + "]";
  }
}
