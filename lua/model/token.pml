/*
  The life of a sign token through a Redis failover, checked by spin over every
  interleaving: `make test-model` runs test/model/spin.test.ts, which searches each
  configuration below; docs/durability.md#a-model-that-is-checked says what it covers.

  One license, N = 2 tokens, one usage stream, one usage worker, one Redis master A and its
  asynchronous replica B, promoted once or never. Token 0's desktop sends an
  Idempotency-Key, redeems, retries or replays (TRIES = 2 requests), may release, and its
  token may expire meanwhile; token 1's desktop sends one request without a key. Redis has
  no copy of the license at first: the first request rebuilds it. Each step is one Lua
  script (atomic on its server), one Postgres statement, or one step of the service between
  them; spin interleaves them in every order.

  Each step, and the lines it stands for (lua/ as it is; src/ where the step is there)

    the fence     issue.lua, redeem.lua and release.lua first check the slot's stamp
                  {b}:node, a key replicated like the others, against the run id of the
                  server running them (lua/includes/batch.lua:21, lua/release.lua:46,
                  lua/includes/server.lua:26-40) and change nothing on another server
                  (NEWSERVER): B is another process, its run id is not the stamp it
                  inherited from A. sync.lua and ack.lua check nothing (the model's ack
                  neither; for its sync, see the four pieces below).
    recover()     on NEWSERVER the service recovers the server, then calls again
                  (src/redis/restarts.ts:75-81): if the stamp still differs, the license
                  copies are dropped (restarts.ts:105-110, :171-183), then lua/stamp.lua:24-32
                  raises the bucket's epoch (every token issued before reads as used: fail
                  closed) and sets the stamp, unless another process has (restarts.ts:111-112).
    issue(t)      the web app gets token t: lua/issue.lua:32-35 through batch.lua:19-36 (the
                  marker of this epoch: batch.lua:22, lua/includes/epoch.lua:9-11) into
                  lua/includes/issueToken.lua:43-44 (no license copy: COPY_MISSING) and
                  issueToken.lua:65-66 (marker "i<epoch>").
    redeem(t, k)  the desktop redeems t, with a key (k) or without: lua/redeem.lua:41-54
                  through batch.lua:19-36 into lua/includes/redeemToken.lua:
                  :97-98    no license copy: COPY_MISSING
                  :109-110  no marker: MARKER_MISSING, 400
                  :111-126  marker not "i<current epoch>" (used, released, or issued before
                            the epoch was raised): 400 TOKEN_SPENT; a keyed retry of the
                            token's own redemption replays its 200 and spends nothing
                            (:117-124), unless the token was released since (:120)
                  :150-165  the spend: the key's record claimed (:150-152), used + 1
                            (:153-154), marker "u..." (:156), the spent event XADDed
                            (:159-165)
                  With WAIT its 200 waits for the replica (below).
    release(t)    the holder gives the unit back: release.lua:48-49 (COPY_MISSING),
                  :53-65 (released already, or not redeemed: refused), :86-94 (used - 1,
                  rr + 1, marker "r", the released event XADDed).
    expiry        token 0 passes its expiry: its redemptions are refused before Redis is
                  asked (src/routes/redemption.ts:176-180, src/tokens/jwt.ts:114-128); a
                  step of its desktop's process, since nothing else reads it.
    hydrate()     no license copy: the stream, then Postgres, are read on the master of
                  that moment (one step here): Postgres's counts plus the queued events it
                  has no row for (src/licenses/hot.ts:145-154; copyOf,
                  src/licenses/rowCopy.ts:45-75); then lua/sync.lua:75-97 creates the
                  copy if there is none, on the master of that later moment.
    Worker        reads every queued event (src/usage/worker.ts:181 next) on the master of
                  that moment; writes them to Postgres in one statement
                  (src/usage/persist.ts:61-70 and :76-79: one redemption row and one release
                  row per token at most, "on conflict (token_id) do nothing"; :126, used_quota
                  moves by the rows inserted); then acknowledges them with lua/ack.lua:41-69
                  (XACK, XTRIM) and :71-79 (a copy counting fewer redemptions than Postgres
                  is dropped, to be rebuilt), on the master of that moment.
    Failover      asynchronous replication: until a cut, at any moment, B holds every
                  write of A (a script's writes together); from the cut on it holds A as it
                  was then; at any moment after the cut B is promoted, and every write A
                  made since is lost: markers, counts, idempotency records, stream events
                  and acknowledgements alike, any number k >= 0 of the last writes. The
                  worker may hold a batch read from A, and may have written to Postgres
                  events B never got.
    WAIT          -DWAIT (REDIS_WAIT_REPLICAS >= 1, src/redis/replicaWait.ts): a
                  redemption's 200, spend or replay, is answered once the replica holds its
                  write; a failover first makes it a 503. Without it, at once. Releases are
                  answered at once either way, as in src/redis/replicaWait.ts.

  Four pieces the first search showed the fence alone lacks, which lua/ now has; each can be
  taken out to see its counterexample (-DAS_IN_LUA: all four out, the scripts as they were):

    the epoch of a used marker (-DNO_USED_EPOCH)
                  a "u" marker keeps the epoch it was written in (redeemToken.lua
                  usedThisEpoch), and a keyed
                  retry's replay (redeemToken.lua:117-124) or a release (release.lua:63-65)
                  of one of an earlier epoch is refused. Without it: a release on A that
                  the worker wrote to Postgres is lost in the failover; B still reads "u",
                  so a keyed retry replays the 200 of a unit Postgres has given back
                  (inv2), and with a second release request (-DRELEASE_TRIES=2) Redis gives
                  it back twice (inv3).
    ack.lua dropping on releases (-DNO_RELEASE_DROP)
                  a copy whose rr is below Postgres's released_quota is dropped too
                  (ack.lua's drop). Without it: the same lost release, written after B
                  rebuilt its copy, leaves Redis counting the unit spent while Postgres has
                  it back (inv3): u + rr equals Postgres's used + released, so ack.lua:75
                  does not see it.
    ack.lua's floor (-DNO_ACK_FLOOR)
                  when ack.lua finds no copy, or drops it, it keeps Postgres's counts of
                  redemptions (used + released) and of releases, and sync.lua creates no
                  copy counting less. Without it: after a failover, a hydration reads
                  Postgres before the worker writes a batch it held from A (events B's
                  stream lacks), the ack finds no copy to drop, and sync.lua then writes
                  the copy without them (inv3).
    sync.lua on the server the stream was read on (-DNO_SYNC_CHECK)
                  sync.lua creates a copy only on a server its stamp names, and the one the
                  hydration read the stream on. Without it: a hydration reads A's stream,
                  with a redemption the failover then loses, and writes the copy on B
                  between the recovery's drop and its stamp: Redis counts a unit no
                  redemption kept (inv3).

  Abstracted away: token ids, times and signatures (a token is its index); quota,
  packages, forfeits, rate limits, origins, the license's own expiry and activity (refusals
  that change nothing, like a client that stops); the release window and daily allowance (a
  release refused for them is one not sent); the figures and receipt a replay carries; a
  key reused for another token; the issued event (audit only); settle.lua and the
  second-redemption check (src/usage/secondRedemptions.ts: nothing redeems twice here but
  the mutant NO_FENCE); the stream's entry ids, its order and the consumer group (an event
  is its kind and token, the worker alone reads every event not acknowledged); the
  hydration reading stream and Postgres at once; the marker hash's expiry; a second
  failover, and writes A accepts after B's promotion (they are lost writes like the
  others). The recovery's drop and check of the stamp are one step, and its stamp.lua
  another.

  The invariants, each assertion named by the variables it reads

    inv1  no token redeemed twice: at most one 200 that spent a unit per token, over the
          whole history, across the failover (inv1_spending_200s).
    inv2  no 200 without a unit spent and kept: once the worker has drained the stream,
          every token whose holder holds a 200 (not given back by a release) has its
          redemption row in Postgres and no release row (inv2_holds_200). With WAIT it
          holds. Without WAIT a 200 answered before the replica had its write is lost
          with it in a failover, and spin finds that; -DLOST_200_ALLOWED exempts exactly
          those 200s (answered on A for a spend B did not get), to check all the rest.
    inv3  the books agree once drained: Postgres's used_quota equals its redemption rows
          less its release rows (nothing counted twice), and Redis's used count equals
          used_quota (inv3_pg_rows, inv3_redis_used).

  The mutants, each caught by the invariant it breaks

    -DNO_FENCE          no stamp check, no recovery (without WAIT): a redemption the
                        failover lost is redeemed again (inv1; stale copies break inv2 and
                        inv3 too).
    -DNO_RELEASE_CHECK  a keyed retry after a release replays the 200 (redeemToken.lua:120
                        taken out): inv2.
    -DNO_DEDUP          the worker counts a redemption Postgres already has (no "on
                        conflict do nothing"): an event read again after its acknowledgement
                        was lost is counted twice, inv3.
    -DNO_ACK_DROP       ack.lua keeps a copy counting fewer redemptions than Postgres
                        (ack.lua:71-79 taken out): a batch written after B rebuilt its copy,
                        inv3.

  By hand: spin -DWAIT -a token.pml && gcc -O2 -DSAFETY -DCOLLAPSE -o pan pan.c &&
  ./pan -m10000 -c0 (-c0: on past the first error, naming every assertion that fails).
*/

#ifndef N
#define N 2          /* tokens (3 is beyond 90 M states: not searched by the test) */
#endif
#ifndef TRIES
#define TRIES 2      /* redemption requests per token: the first, and one retry or replay */
#endif
#ifndef RELEASE_TRIES
#define RELEASE_TRIES 1  /* release requests of token 0 (2: a release retried) */
#endif

/* token 0's desktop sends an Idempotency-Key, retries or replays, may release, and its
   token may expire; the others' send one request without a key */
#define KEYED(t) (t == 0)
#define TRIES_OF(t) (t == 0 -> TRIES : 1)
#define RELEASES(t) (t == 0 -> RELEASE_TRIES : 0)

#define A 0          /* the first master, run id 1 */
#define B 1          /* its replica, promoted at the failover, run id 2 */
#define MK(s, t) ((s) * N + (t))
#define BIT(t) (1 << (t))
#define HAS(mask, t) (((mask) >> (t)) & 1)

/* token markers: none, "i<epoch>", "u...", "r" */
#define NONE 0
#define ISSUED 1
#define USED 2
#define RELEASED 3

/* script outcomes */
#define DONE 1
#define REPLAY 2        /* DONE of a keyed retry: the first redemption's answer, nothing spent */
#define REFUSED 3       /* 400: MARKER_MISSING, TOKEN_SPENT; ALREADY_RELEASED, NOT_REDEEMED */
#define NEW_SERVER 4
#define COPY_MISSING 5
#define UNAVAILABLE 6   /* 503: the failover came before the replica acknowledged (WAIT) */

/* the scripts as lua/ has them: without the four pieces the model adds */
#ifdef AS_IN_LUA
#define NO_USED_EPOCH
#define NO_RELEASE_DROP
#define NO_SYNC_CHECK
#define NO_ACK_FLOOR
#endif

#ifdef NO_FENCE
#define STAMP_OK 1
#else
#define STAMP_OK (stamp[cur] == cur + 1)
#endif

/* Redis, per server (A, B; per server and token: MK) */
byte marker[2 * N];
byte mepoch[2 * N];     /* the epoch of the token's issue, which its "u" and "r" markers keep */
bit  idem[2 * N];       /* the Idempotency-Key record of the token's keyed redemption */
byte epoch[2];          /* {b}:epoch */
byte stamp[2];          /* {b}:node: the run id of the server the slot was last verified on */
bit  copy[2];           /* the license copy {b}:l:<firmaId> exists */
short used[2];          /* its u */
short rr[2];            /* its rr: units given back */
short floor[2];         /* Postgres's redemptions and ... */
short rfloor[2];        /* ... releases, as ack.lua last saw them while there was no copy */
byte qspent[2];         /* {b}:ev: the tokens whose spent event is queued, a bit each */
byte qrel[2];           /* ... and whose released event is */
byte cur = A;           /* the master the service talks to */
bit  cut;               /* B has stopped receiving A's writes: it holds A as it was then */
bit  failed;            /* B has been promoted */
bit  fo_done;           /* the failover happened, or will not */

/* Postgres */
bit  pg_red[N];         /* token_redemptions row */
bit  pg_rel[N];         /* token_releases row */
short pg_used_quota;    /* licenses.used_quota */
short pg_released;      /* licenses.released_quota */

/* what clients were answered */
byte inv1_spending_200s[N];  /* 200s that spent a unit */
bit  inv2_holds_200[N];      /* the holder has a 200 for the token and has not released it */
bit  lost200[N];             /* that 200 was answered on A for a spend B does not hold */
bit  wrepl[N];               /* the token's spend reached B (before the cut) */
bit  expired[N];
byte done;                   /* token processes finished */
bit  worker_busy;

/* scratch, zero outside the steps that use them */
byte gi;
short gq, gr;
short inv3_pg_rows, inv3_redis_used;

/* NEW_SERVER: the license copies dropped, unless another process has stamped the bucket
   meanwhile; then stamp.lua: the epoch raised and the stamp set, if it still differs */
inline recover() {
  d_step {
    if
    :: stamp[cur] != cur + 1 -> copy[cur] = 0
    :: else -> skip
    fi
  };
  d_step {
    if
    :: stamp[cur] != cur + 1 -> epoch[cur]++; stamp[cur] = cur + 1
    :: else -> skip
    fi
  }
}

/* COPY_MISSING: the copy rebuilt. First the stream, then Postgres, read on the master of
   that moment (one step): Postgres's counts plus the queued events it has no row for
   (copyOf). Then sync.lua creates the copy if there is none, on the master of that moment,
   which may be another: as in lua/ it checks nothing; with the check the model adds, only
   on a server its stamp names and the one the stream was read on */
#ifdef NO_SYNC_CHECK
#define SYNC_OK 1
#else
#define SYNC_OK (STAMP_OK && hs == cur)
#endif
inline hydrate() {
  d_step {
    hs = cur;
    gi = 0;
    do
    :: gi < N ->
       if
       :: HAS(qspent[cur], gi) && !pg_red[gi] -> gq++
       :: else -> skip
       fi;
       if
       :: HAS(qrel[cur], gi) && !pg_rel[gi] -> gr++
       :: else -> skip
       fi;
       gi++
    :: else -> break
    od;
    hu = pg_used_quota + gq - gr;
    hr = pg_released + gr;
    gq = 0; gr = 0; gi = 0
  };
  d_step {
    if
#ifdef NO_ACK_FLOOR
    :: SYNC_OK && !copy[cur] -> copy[cur] = 1; used[cur] = hu; rr[cur] = hr
#else
    :: SYNC_OK && !copy[cur] && hu + hr >= floor[cur] && hr >= rfloor[cur] -> copy[cur] = 1; used[cur] = hu; rr[cur] = hr
#endif
    :: else -> skip
    fi;
    hs = 0; hu = 0; hr = 0
  }
}

/* after a script: NEW_SERVER or COPY_MISSING are repaired and the script runs again */
#define REPAIRED \
     if \
     :: res == NEW_SERVER -> recover() \
     :: res == COPY_MISSING -> hydrate() \
     :: else -> break \
     fi

inline issue(t) {
  do
  :: d_step {
       s = cur;
       if
       :: !STAMP_OK -> res = NEW_SERVER
       :: else ->
          if
          :: !copy[s] -> res = COPY_MISSING
          :: else -> marker[MK(s, t)] = ISSUED; mepoch[MK(s, t)] = epoch[s]; res = DONE
          fi
       fi
     };
     REPAIRED
  od;
  s = 0; res = 0
}

inline redeem(t, keyed) {
  if
  :: expired[t] -> skip   /* 401, before Redis */
  :: else ->
     do
     :: d_step {
          s = cur;
          if
          :: !STAMP_OK -> res = NEW_SERVER
          :: else ->
             if
             :: !copy[s] -> res = COPY_MISSING
             :: else ->
                if
                :: marker[MK(s, t)] == NONE -> res = REFUSED
                :: marker[MK(s, t)] == ISSUED && mepoch[MK(s, t)] == epoch[s] ->
                   used[s]++;
                   marker[MK(s, t)] = USED;
                   if
                   :: keyed -> idem[MK(s, t)] = 1
                   :: else -> skip
                   fi;
                   qspent[s] = qspent[s] | BIT(t);
#if defined(WAIT) || defined(LOST_200_ALLOWED)
                   if
                   :: s == A && !cut -> wrepl[t] = 1
                   :: else -> skip
                   fi;
#endif
                   res = DONE
                :: else ->
                   /* used, released, or issued in an earlier epoch */
                   if
                   :: keyed && idem[MK(s, t)] ->
                      if
#ifndef NO_RELEASE_CHECK
                      :: marker[MK(s, t)] == RELEASED -> res = REFUSED
#endif
#ifndef NO_USED_EPOCH
                      :: marker[MK(s, t)] != RELEASED && mepoch[MK(s, t)] != epoch[s] -> res = REFUSED
#endif
                      :: else -> res = REPLAY
                      fi
                   :: else -> res = REFUSED
                   fi
                fi
             fi
          fi
        };
        REPAIRED
     od;
     if
     :: res == DONE || res == REPLAY ->
#ifdef WAIT
        if
        :: s == B -> skip             /* no further failover in the model */
        :: s == A && wrepl[t] -> skip /* the replica acknowledged */
        :: s == A && failed -> res = UNAVAILABLE
        fi;
#endif
        if
        :: res != UNAVAILABLE ->
           d_step {
             inv2_holds_200[t] = 1;
#ifdef LOST_200_ALLOWED
             if
             :: s == B -> lost200[t] = 0
             :: s == A && failed && !wrepl[t] -> lost200[t] = 1
             :: else -> skip
             fi;
#endif
             if
             :: res == DONE ->
                inv1_spending_200s[t]++;
                assert(inv1_spending_200s[t] <= 1)
             :: else -> skip
             fi
           }
        :: else -> skip
        fi
     :: else -> skip
     fi;
     s = 0; res = 0
  fi
}

inline release(t) {
  /* the holder gives up the signature when it asks for the unit back, whatever the answer */
  inv2_holds_200[t] = 0;
  do
  :: d_step {
       s = cur;
       if
       :: !STAMP_OK -> res = NEW_SERVER
       :: else ->
          if
          :: !copy[s] -> res = COPY_MISSING
          :: else ->
             if
#ifdef NO_USED_EPOCH
             :: marker[MK(s, t)] == USED ->
#else
             :: marker[MK(s, t)] == USED && mepoch[MK(s, t)] == epoch[s] ->
#endif
                used[s]--;
                rr[s]++;
                marker[MK(s, t)] = RELEASED;
                qrel[s] = qrel[s] | BIT(t);
                res = DONE
             :: else -> res = REFUSED
             fi
          fi
       fi
     };
     REPAIRED
  od;
  s = 0; res = 0
}

/* the web app issues the token; its desktop redeems it, retries or replays it, may
   release it, in any order, and the token may expire meanwhile */
proctype Token(byte t) {
  byte s, res, tries, hs;
  short hu, hr;
  byte released;
  issue(t);
  do
  :: tries < TRIES_OF(t) -> tries++; redeem(t, KEYED(t))
  :: released < RELEASES(t) -> released++; release(t)
  :: t == 0 && !expired[t] -> expired[t] = 1
  :: break
  od;
  atomic { tries = 0; released = 0; done++ }
}

/* Asynchronous replication and the failover. Until the cut B receives every write of A
   as A makes it (a script's writes together); at the cut it stops, holding A as it was;
   the failover promotes it at any moment after, losing every write A made since the cut.
   The cut at any moment and the failover at any later one: B holds any prefix of A's
   writes. Or no failover at all. */
proctype Failover() {
  if
  :: skip
  :: d_step {
       cut = 1;
       gi = 0;
       do
       :: gi < N ->
          marker[MK(B, gi)] = marker[MK(A, gi)];
          mepoch[MK(B, gi)] = mepoch[MK(A, gi)];
          idem[MK(B, gi)] = idem[MK(A, gi)];
          gi++
       :: else -> break
       od;
       gi = 0;
       epoch[B] = epoch[A];
       stamp[B] = stamp[A];
       copy[B] = copy[A];
       used[B] = used[A];
       rr[B] = rr[A];
       floor[B] = floor[A];
       rfloor[B] = rfloor[A];
       qspent[B] = qspent[A];
       qrel[B] = qrel[A]
     };
     d_step {
       cur = B;
       failed = 1;
#ifdef LOST_200_ALLOWED
       gi = 0;
       do
       :: gi < N ->
          if
          :: inv2_holds_200[gi] && !wrepl[gi] -> lost200[gi] = 1
          :: else -> skip
          fi;
          gi++
       :: else -> break
       od;
       gi = 0
#endif
     }
  fi;
  fo_done = 1
}

proctype Worker() {
  byte bspent, brel;
end:
  do
  :: atomic {
       (qspent[cur] | qrel[cur]) != 0 ->
       worker_busy = 1;
       bspent = qspent[cur];
       brel = qrel[cur]
     };
     /* persist.ts: one statement */
     d_step {
       gi = 0;
       do
       :: gi < N ->
          if
          :: HAS(bspent, gi) && !pg_red[gi] -> pg_red[gi] = 1; pg_used_quota++
#ifdef NO_DEDUP
          :: HAS(bspent, gi) && pg_red[gi] -> pg_used_quota++
#endif
          :: else -> skip
          fi;
          if
          :: HAS(brel, gi) && !pg_rel[gi] -> pg_rel[gi] = 1; pg_used_quota--; pg_released++
          :: else -> skip
          fi;
          gi++
       :: else -> break
       od;
       gi = 0
     };
     /* ack.lua, on the master of that moment (B after a failover; no stamp check) */
     d_step {
       qspent[cur] = qspent[cur] & ~bspent;
       qrel[cur] = qrel[cur] & ~brel;
#ifndef NO_ACK_DROP
       if
       :: copy[cur] && used[cur] + rr[cur] < pg_used_quota + pg_released -> copy[cur] = 0
#ifndef NO_RELEASE_DROP
       :: copy[cur] && rr[cur] < pg_released -> copy[cur] = 0
#endif
       :: else -> skip
       fi;
#endif
#ifndef NO_ACK_FLOOR
       /* no copy, or one just dropped: a copy a hydration creates later must count this much */
       if
       :: !copy[cur] -> floor[cur] = pg_used_quota + pg_released; rfloor[cur] = pg_released
       :: else -> skip
       fi;
#endif
       bspent = 0; brel = 0; worker_busy = 0
     }
  od
}

/* once every token's story is over and the worker has drained the stream */
proctype Check() {
  atomic {
    done == N && fo_done && !worker_busy && (qspent[cur] | qrel[cur]) == 0 ->
    gi = 0;
    do
    :: gi < N ->
#ifdef LOST_200_ALLOWED
       assert(!inv2_holds_200[gi] || lost200[gi] || (pg_red[gi] && !pg_rel[gi]));
#else
       assert(!inv2_holds_200[gi] || (pg_red[gi] && !pg_rel[gi]));
#endif
       inv3_pg_rows = inv3_pg_rows + pg_red[gi] - pg_rel[gi];
       gi++
    :: else -> break
    od;
    assert(inv3_pg_rows == pg_used_quota);
    /* a copy counts as it is on a verified server; the next script on an unverified one
       (NEW_SERVER) recovers it first, and a missing copy is rebuilt from Postgres, the
       stream being empty */
    if
    :: copy[cur] && STAMP_OK -> inv3_redis_used = used[cur]
    :: else -> inv3_redis_used = pg_used_quota
    fi;
    assert(inv3_redis_used == pg_used_quota)
  }
}

init {
  byte t;
  atomic {
    stamp[A] = 1;   /* the slot verified on A; no license copy yet: the first request hydrates it */
    run Failover();
    run Worker();
    run Check();
    do
    :: t < N -> run Token(t); t++
    :: else -> break
    od;
    t = 0
  }
}
