/*
 * peer_game.c: a small game that uses parsec-net exactly as a game would, for the peer-to-peer
 * tests (tests/peer_*.rs). It initializes the library, runs the console lines it is given, sets
 * its name, connects (to one peer, or by broadcast discovery), and then runs a frame loop:
 * NET_SetLocalState with a deterministic moving ship, NETs_MaintainNet, NET_PollEvent. Once
 * connected it joins; once the expected number of other players is seated it says
 * "hello from NAME", creates and kills an object, fires a missile, drops an extra, makes a
 * particle object, sends an unreliable custom event, fires one laser and sends one reliable
 * custom event. Every event it polls is printed as one line; at the end it prints what it knows
 * about the other players.
 *
 * Usage:
 *   peer_game --name NAME [--exec LINE]... [--peer HOST:PORT] [--expect N]
 *             [--duration MS] [--linger MS] [--frame-ms MS] [--hostile-callback]
 *             [--pos [WHO=]X,Y,Z]... [--near D] [--control] [--series-ms MS] [--lookups]
 *             [--connect-tries N] [--series-size B] [--series-batch K] [--lookups-all]
 *   peer_game --play FILE [--duration MS] [--frame-ms MS] [--lookups] [--lookups-all]
 *
 *   --exec LINE     a console line run after NET_Init, before connecting (repeatable), e.g.
 *                   "net.udp.bind 127.0.0.1", "net.port 7000", "record /tmp/x.demo"
 *   --peer H:P      connect with the console's `connect H:P`; without it NETs_Connect() is
 *                   called (peer discovery by broadcast)
 *   --expect N      act (say, fire, ...) once N other players are seated; finish once all N
 *                   sent their text, laser, reliable custom event (sent last, so every reliable
 *                   event before it has arrived too) and a state with a valid marker
 *   --duration MS   give up (summary with complete=no) after this long (default 20000)
 *   --linger MS     keep running frames this long after finishing, so the others get
 *                   everything this game sent before it leaves (default 1000)
 *   --play FILE     play the demo FILE back (`play FILE`) and print its events until it ends
 *   --hostile-callback
 *                   break the position callback's rules: it calls NET_PollEvent (the library
 *                   must refuse with NET_ERR_STATE; SUMMARY shows the result as reentry=RC)
 *                   and reports a NaN position for the game's object (which must be ignored)
 *   --pos [WHO=]X,Y,Z
 *                   where the ship of the player named WHO flies (without WHO=: this game's
 *                   own): X,Y,Z is added to the position below, by the sender when it makes its
 *                   state and by a receiver when it checks one (so give every game the same
 *                   --pos list); players without one fly at 0,0,0 (repeatable)
 *   --near D        with --pos: finishing needs a state only from the players whose base
 *                   (--pos) is within D of this game's own (a gameserver forwards no state
 *                   between ships further apart than its distance)
 *   --control       read lines from stdin while running (checked every frame); a line is run
 *                   as a console line, except for these:
 *                     @quit         print the summary (if not printed yet) and end the game
 *                     @summary      print a new summary of what the game knows now
 *                     @series on    start sending the numbered series (--series-ms)
 *                     @series off   stop it
 *                     @pos [WHO=]X,Y,Z
 *                                   move the ship of WHO (default: this game's own) to that
 *                                   base from now on, as --pos would have (send it to every
 *                                   game, so the receivers check states against the new base)
 *                     @burst K      queue the next K numbers of the series now (whether the
 *                                   series is on or not; each reported as a SERIES line)
 *                     @unreliable K queue K unreliable custom events type 601: a number of
 *                                   their own (0, 1, ...; 4 bytes little-endian) then this
 *                                   game's name; each reported as an UNRELIABLE line
 *                   The game then does not end when it finishes and has lingered: only on
 *                   @quit or the end of stdin. It also follows reconnections: after a
 *                   DISCONNECTED event it joins again on the next CONNECTED (in any slot).
 *   --connect-tries N
 *                   connect up to N times (default 1): an ERROR event before the game was
 *                   ever connected (a join that timed out on a damaged network) runs the
 *                   connect again, as a player would, instead of giving up
 *   --series-ms MS  with --control: while the series is on, every MS ms queue the reliable
 *                   custom event type 600 with the series number n (0, 1, ...; 4 bytes
 *                   little-endian) followed by this game's name; a number that the library
 *                   refuses (rc < 0, e.g. while not connected) is tried again next time
 *   --series-size B with --series-ms: pad each series event with zero bytes to B bytes (at
 *                   most 256; the receiver's name ends at the first zero byte)
 *   --series-batch K with --series-ms: queue K numbers each time the series is due (default 1)
 *   --lookups       after every EVENT line, a LOOKUP line: what the lookups answer while the
 *                   game handles that event
 *   --lookups-all   --lookups, and every LOOKUP line also shows every slot 0-15 and the owner
 *                   of every object seen in an event so far (see below)
 *
 * Output, one line each (flushed); strings are quoted, with \" \\ and \xNN escapes:
 *   EXEC rc=RC line="LINE" reply="REPLY"          every console line run
 *   ACT WHAT rc=RC ...                            every game call that sends something
 *   EVENT type=NAME player=P object=O class=C target=T flags=F list=L custom=U
 *         pos=X,Y,Z dir=X,Y,Z orient=X,Y,Z,W data=HEX text="TEXT"
 *                                                 every polled event (floats with %g)
 *   LOOKUP player=P [player_name="NAME"|none player_state=RC] own=S [own_name="NAME"|none
 *          own_state=RC own_marker=yes|no] owner=O
 *                                                 --lookups: NET_FetchPlayerName and
 *                                                 NET_GetPlayerState of the event's player and of
 *                                                 the own slot (the bracketed part only for a slot
 *                                                 0-15; own_marker: the state carries a ship
 *                                                 marker, whatever its frame), NET_FetchOwner of
 *                                                 the event's object (-9 without one)
 *          [s0=NAME|none/RC[/HASH] ... s15=... owners=ID:O,...]
 *                                                 --lookups-all: for every slot its
 *                                                 NET_FetchPlayerName, NET_GetPlayerState's
 *                                                 result and, when NET_OK, a hash (FNV-1a, hex)
 *                                                 of every field of the state; NET_FetchOwner of
 *                                                 every object id seen in an event so far
 *   SUMMARY mode=live|play slot=S name="NAME" frames=F callback_calls=N reentry=RC
 *           complete=yes|no
 *   PLAYER slot=S name="NAME" state=ok|err(RC) marker=ok|none|bad(REASON) frame=F pos=X,Y,Z
 *   OWNER object=O owner=S                        NET_FetchOwner of every object id seen in a
 *                                                 creation or kill event
 *   SUMMARY_END
 *   END frames=F callback_calls=N                 a live game's last frame
 *   STATUS text="TEXT"                            then the console's `status`
 *   STOP rc=RC reply="REPLY"                      `stop` (a recording at exit; after playback)
 *   CONTROL line="LINE"                           every line read with --control
 *   SERIES n=N rc=RC slot=S to="NAME,..."         every attempt to send series number N: the
 *                                                 result, this game's slot, and the names of
 *                                                 the other players seated at that moment
 *   UNRELIABLE n=N rc=RC slot=S                   every unreliable numbered event (@unreliable)
 *
 * The ship of the player in slot S at frame F: pos = (100 S + (F mod 1000) / 4, 2 S,
 * -(F mod 500)) plus its base (--pos), orient = (0, 0, 0, 1), vel = (0.25, S, 0); the game area
 * holds the marker "PSEC", S, F (4 bytes little-endian), the name's length and the name (at most
 * 22 bytes). A receiver recomputes the whole state from the slot, the name (and its base) and F,
 * so any damage shows.
 * What the game in slot S sends once the others are seated, in this order (all reliable except
 * the first custom event):
 *   say "hello from NAME"
 *   object   id 2000 + S, class 11, pos (S, 10, 20), orient (0, 0.6, 0, 0.8), flags 0xA5000000 + S
 *   missile  id 3000 + S, class 12, pos (S, 11, 21), dir (1, 0, 0), target 1000 + S
 *   extra    id 4000 + S, index 13 + S, pos (S, 12, 22)
 *   particle type 14 + S, origin (S, 13, 23)
 *   kill     id 2000 + S, list 9
 *   custom   type 500 + S, flags 0 (unreliable), the bytes of "unreliable from NAME"
 *   laser    id 1000 + S, class 7, dir (0, 0, 1); fired at (-5, -5, -5), but the position
 *            callback reports (100 S + 1, 2, 3) for it, which is what goes out
 *   custom   type 300 + S, NET_SEND_RELIABLE, 40 bytes, byte i = 31 S + 7 i (mod 256)
 * The position callback knows only the laser, so the object and the missile keep the positions
 * they were created with.
 *
 * Exit status: 0 after a run (complete or not: the summary says), 2 on bad usage or a failed
 * setup line.
 */

#define _POSIX_C_SOURCE 200809L /* nanosleep, clock_gettime, poll, read */

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "parsec_net.h"

#define MAX_EXECS 32
#define MAX_SLOTS 16
#define MAX_OBJECTS 64
#define CONSOLE_CAP 8192
#define MARKER_NAME_MAX 22
#define LASER_ID_BASE 1000u
#define LASER_CLASS 7
#define CUSTOM_TYPE_BASE 300
#define CUSTOM_LEN 40
#define UNRELIABLE_TYPE_BASE 500
#define OBJECT_ID_BASE 2000u
#define MISSILE_ID_BASE 3000u
#define EXTRA_ID_BASE 4000u
#define MAX_BASES 16
#define SERIES_TYPE 600
#define UNRELIABLE_SERIES_TYPE 601
#define CONTROL_CAP 1024

/* Command-line settings. */
struct options {
    const char *execs[MAX_EXECS];
    int exec_count;
    const char *name;
    const char *peer;
    const char *play;
    int expect;
    long duration_ms;
    long linger_ms;
    long frame_ms;
    int hostile_callback;
    int control;      /* --control: lines from stdin */
    long series_ms;   /* --series-ms */
    long series_size; /* --series-size: pad series events to this many bytes */
    long series_batch; /* --series-batch: numbers queued each time the series is due */
    int lookups;      /* --lookups: a LOOKUP line after every EVENT line (2: --lookups-all) */
    double near;      /* --near D; < 0 when not given */
    long connect_tries; /* --connect-tries N */
};

/* The --pos table: where each named player's ship flies (name NULL: this game's own). It is
 * global because the state checks (also in the summary) need it. */
static struct {
    const char *name;
    float pos[3];
} bases[MAX_BASES];
static int base_count;
static const char *own_name;

/* What arrived from one other player (slot). */
struct other {
    int text_ok; /* "hello from NAME" with its name when the text arrived */
    /* The last text it said, judged again with the slot's name when completeness is judged:
     * the text may arrive before the player's name (through a gameserver, lost TCP segments
     * can hold the server's "add ip:" line back longer than the library holds early events,
     * which it then delivers rather than lose them). */
    char text[NET_EVENT_TEXT_LEN];
    int text_seen;
    int laser_ok;  /* its laser, with the position its callback gave */
    int custom_ok; /* its reliable custom event, every byte right */
};

/* What the game knows about the others at one moment (the summary). */
struct snapshot {
    int taken;
    struct {
        int present;
        char name[MARKER_NAME_MAX + 10];
        int32_t state_rc;
        NET_ShipState state;
    } players[MAX_SLOTS];
    int32_t owners[MAX_OBJECTS];
};

/* The game. */
struct game {
    struct options opt;
    int32_t slot;          /* own slot, -1 until connected */
    int connected;         /* NET_EVENT_CONNECTED arrived (and no DISCONNECTED since) */
    int ever_connected;    /* NET_EVENT_CONNECTED arrived at least once */
    int gave_up;           /* an error event arrived before connecting, with no try left */
    long connects_done;    /* connects started (--connect-tries) */
    int connect_again;     /* an error event before connecting left a try: connect next frame */
    int joined;            /* NETs_Join was called */
    int acted;             /* said hello, fired, sent the custom event */
    uint32_t acted_frame;  /* the frame it acted in */
    uint32_t frame;        /* frames run so far */
    long callback_calls;   /* calls of the object-position callback */
    int32_t reentry_rc;    /* --hostile-callback: NET_PollEvent's answer inside the callback */
    struct other others[MAX_SLOTS];
    uint32_t objects[MAX_OBJECTS]; /* object ids seen in creation and kill events, in order */
    int object_count;
    struct snapshot snap;
    int live;              /* a live game (not playing a demo back) */
    int quit;              /* --control: @quit read, or stdin ended */
    int series_on;         /* --control: @series on */
    uint32_t series_next;  /* the next series number to send */
    uint32_t unreliable_next; /* the next @unreliable number */
    long long series_due;  /* when to send it */
    char control_buf[CONTROL_CAP];
    size_t control_len;
};

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
    struct timespec ts;

    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

/* Print `len` bytes (or up to a NUL when len is (size_t)-1) as a quoted, escaped string. */
static void print_quoted(const char *text, size_t len)
{
    size_t i;

    putchar('"');
    for (i = 0; i < len && text[i] != '\0'; i++) {
        unsigned char c = (unsigned char)text[i];

        if (c == '"' || c == '\\') {
            printf("\\%c", c);
        } else if (c < 0x20 || c >= 0x7f) {
            printf("\\x%02x", c);
        } else {
            putchar(c);
        }
    }
    putchar('"');
}

/* Run one console line and print it with its result. Returns the result code. */
static int32_t console(const char *line, char *reply, size_t reply_cap)
{
    static char scratch[CONSOLE_CAP];
    int32_t rc;

    if (reply == NULL) {
        reply = scratch;
        reply_cap = sizeof scratch;
    }
    rc = NET_ConsoleExec(line, reply, reply_cap);
    printf("EXEC rc=%d line=", (int)rc);
    print_quoted(line, (size_t)-1);
    printf(" reply=");
    print_quoted(reply, reply_cap);
    printf("\n");
    fflush(stdout);
    return rc;
}

/* Whether the console's `status` says a demo is playing / recording (quietly: not printed). */
static int demo_state_is(const char *what)
{
    static char out[CONSOLE_CAP];
    char needle[40];

    if (NET_ConsoleExec("status", out, sizeof out) != NET_OK) {
        return 0;
    }
    snprintf(needle, sizeof needle, "demo %s", what);
    return strstr(out, needle) != NULL;
}

/* ----- the deterministic ship and its marker ------------------------------------------------ */

/* The base (--pos) of the ship of the player named `name`. */
static void base_of(const char *name, float out[3])
{
    int i;

    out[0] = out[1] = out[2] = 0.0f;
    for (i = 0; i < base_count; i++) {
        const char *who = bases[i].name != NULL ? bases[i].name : own_name;

        if (who != NULL && name != NULL && strcmp(who, name) == 0) {
            memcpy(out, bases[i].pos, sizeof bases[i].pos);
            return;
        }
    }
}

static void make_state(int32_t slot, uint32_t frame, const char *name, NET_ShipState *s)
{
    size_t name_len = strlen(name);
    float base[3];

    if (name_len > MARKER_NAME_MAX) {
        name_len = MARKER_NAME_MAX;
    }
    base_of(name, base);
    memset(s, 0, sizeof *s);
    s->pos[0] = (float)(slot * 100) + (float)(frame % 1000) * 0.25f + base[0];
    s->pos[1] = (float)(2 * slot) + base[1];
    s->pos[2] = -(float)(frame % 500) + base[2];
    s->orient[3] = 1.0f;
    s->vel[0] = 0.25f;
    s->vel[1] = (float)slot;
    memcpy(s->game, "PSEC", 4);
    s->game[4] = (uint8_t)slot;
    s->game[5] = (uint8_t)(frame & 0xff);
    s->game[6] = (uint8_t)((frame >> 8) & 0xff);
    s->game[7] = (uint8_t)((frame >> 16) & 0xff);
    s->game[8] = (uint8_t)((frame >> 24) & 0xff);
    s->game[9] = (uint8_t)name_len;
    memcpy(s->game + 10, name, name_len);
}

/* Check a received state against the ship of `slot` named `name`. Returns NULL if it is
 * exactly the state that player's game set for the frame it carries (stored in *frame), else
 * what is wrong. */
static const char *check_marker(int32_t slot, const char *name, const NET_ShipState *s,
                                uint32_t *frame)
{
    NET_ShipState want;

    if (memcmp(s->game, "PSEC", 4) != 0) {
        return "magic";
    }
    if (s->game[4] != (uint8_t)slot) {
        return "slot";
    }
    *frame = (uint32_t)s->game[5] | (uint32_t)s->game[6] << 8 | (uint32_t)s->game[7] << 16 |
             (uint32_t)s->game[8] << 24;
    make_state(slot, *frame, name, &want);
    if (memcmp(s->game, want.game, sizeof want.game) != 0) {
        return "name";
    }
    if (memcmp(s->pos, want.pos, sizeof want.pos) != 0 ||
        memcmp(s->orient, want.orient, sizeof want.orient) != 0 ||
        memcmp(s->vel, want.vel, sizeof want.vel) != 0) {
        return "fields";
    }
    return NULL;
}

/* ----- the laser and the custom event ----------------------------------------------------------- */

static uint32_t laser_id(int32_t slot)
{
    return LASER_ID_BASE + (uint32_t)slot;
}

static void laser_position(int32_t slot, float pos[3])
{
    pos[0] = (float)(slot * 100 + 1);
    pos[1] = 2.0f;
    pos[2] = 3.0f;
}

static void custom_data(int32_t slot, uint8_t data[CUSTOM_LEN])
{
    int i;

    for (i = 0; i < CUSTOM_LEN; i++) {
        data[i] = (uint8_t)(slot * 31 + 7 * i);
    }
}

/* The object-position callback: the current position of this game's own laser. Runs inside
 * NETs_MaintainNet and calls no NET_ function (unless --hostile-callback). */
static int32_t object_position(uint32_t object_id, float *pos_out, void *user)
{
    struct game *g = user;

    g->callback_calls++;
    if (g->opt.hostile_callback) {
        NET_Event event;
        int32_t rc = NET_PollEvent(&event);

        /* Keep the first answer, or any answer that is not a refusal. */
        if (g->reentry_rc == 0 || rc != NET_ERR_STATE) {
            g->reentry_rc = rc;
        }
        if (g->slot >= 0 && object_id == OBJECT_ID_BASE + (uint32_t)g->slot) {
            pos_out[0] = pos_out[1] = pos_out[2] = NAN;
            return 1;
        }
    }
    if (g->slot < 0 || object_id != laser_id(g->slot)) {
        return 0;
    }
    laser_position(g->slot, pos_out);
    return 1;
}

/* ----- events --------------------------------------------------------------------------------- */

static const char *event_name(uint32_t type)
{
    switch (type) {
    case NET_EVENT_CONNECTED: return "CONNECTED";
    case NET_EVENT_DISCONNECTED: return "DISCONNECTED";
    case NET_EVENT_PLAYER_CONNECTED: return "PLAYER_CONNECTED";
    case NET_EVENT_PLAYER_DISCONNECTED: return "PLAYER_DISCONNECTED";
    case NET_EVENT_PLAYER_JOINED: return "PLAYER_JOINED";
    case NET_EVENT_PLAYER_UNJOINED: return "PLAYER_UNJOINED";
    case NET_EVENT_PLAYER_NAME: return "PLAYER_NAME";
    case NET_EVENT_TEXT: return "TEXT";
    case NET_EVENT_CREATE_OBJECT: return "CREATE_OBJECT";
    case NET_EVENT_CREATE_LASER: return "CREATE_LASER";
    case NET_EVENT_CREATE_MISSILE: return "CREATE_MISSILE";
    case NET_EVENT_CREATE_EXTRA: return "CREATE_EXTRA";
    case NET_EVENT_KILL_OBJECT: return "KILL_OBJECT";
    case NET_EVENT_PARTICLE_OBJECT: return "PARTICLE_OBJECT";
    case NET_EVENT_CUSTOM: return "CUSTOM";
    case NET_EVENT_ERROR: return "ERROR";
    default: return "UNKNOWN";
    }
}

static void print_event(const NET_Event *e)
{
    uint32_t i, data_len = e->data_len <= NET_EVENT_DATA_LEN ? e->data_len : NET_EVENT_DATA_LEN;

    printf("EVENT type=%s player=%d object=%u class=%u target=%u flags=%u list=%u custom=%u "
           "pos=%g,%g,%g dir=%g,%g,%g orient=%g,%g,%g,%g data=",
           event_name(e->type), (int)e->player_id, (unsigned)e->object_id,
           (unsigned)e->object_class, (unsigned)e->target_id, (unsigned)e->flags,
           (unsigned)e->list_id, (unsigned)e->custom_type, e->pos[0], e->pos[1], e->pos[2],
           e->dir[0], e->dir[1], e->dir[2], e->orient[0], e->orient[1], e->orient[2],
           e->orient[3]);
    for (i = 0; i < data_len; i++) {
        printf("%02x", e->data[i]);
    }
    printf(" text=");
    print_quoted(e->text, NET_EVENT_TEXT_LEN);
    printf("\n");
    fflush(stdout);
}

static int is_other_slot(const struct game *g, int32_t slot)
{
    return slot >= 0 && slot < MAX_SLOTS && slot != g->slot;
}

/* Take note of what an event says (for deciding when the game is complete). */
static void note_event(struct game *g, const NET_Event *e)
{
    int32_t p = e->player_id;
    int i;

    if (e->type == NET_EVENT_CREATE_OBJECT || e->type == NET_EVENT_CREATE_LASER ||
        e->type == NET_EVENT_CREATE_MISSILE || e->type == NET_EVENT_CREATE_EXTRA ||
        e->type == NET_EVENT_KILL_OBJECT) {
        for (i = 0; i < g->object_count && g->objects[i] != e->object_id; i++) {
        }
        if (i == g->object_count && g->object_count < MAX_OBJECTS) {
            g->objects[g->object_count++] = e->object_id;
        }
    }
    switch (e->type) {
    case NET_EVENT_CONNECTED:
        g->slot = p;
        g->connected = 1;
        g->ever_connected = 1;
        break;
    case NET_EVENT_DISCONNECTED:
        /* A live game connects again by itself (a backend switch) or is told to (--control):
         * it joins again once connected, in whatever slot it gets. Out of the game it has no
         * slot, live or in a demo (so the LOOKUP lines after it agree). */
        if (g->live) {
            g->connected = 0;
            g->joined = 0;
        }
        g->slot = -1;
        break;
    case NET_EVENT_ERROR:
        if (!g->ever_connected) {
            if (g->connects_done < g->opt.connect_tries) {
                g->connect_again = 1;
            } else {
                g->gave_up = 1;
            }
        }
        break;
    case NET_EVENT_TEXT:
        if (is_other_slot(g, p)) {
            const char *name = NET_FetchPlayerName(p);
            char want[NET_EVENT_TEXT_LEN];

            snprintf(want, sizeof want, "hello from %s", name != NULL ? name : "?");
            g->others[p].text_ok = name != NULL && strcmp(e->text, want) == 0;
            snprintf(g->others[p].text, sizeof g->others[p].text, "%s", e->text);
            g->others[p].text_seen = 1;
        }
        break;
    case NET_EVENT_CREATE_LASER:
        if (is_other_slot(g, p)) {
            float want[3];

            laser_position(p, want);
            g->others[p].laser_ok = e->object_id == laser_id(p) &&
                                    e->object_class == LASER_CLASS &&
                                    memcmp(e->pos, want, sizeof want) == 0 && e->dir[0] == 0.0f &&
                                    e->dir[1] == 0.0f && e->dir[2] == 1.0f;
        }
        break;
    case NET_EVENT_CUSTOM:
        if (is_other_slot(g, p) && e->custom_type == CUSTOM_TYPE_BASE + p) {
            uint8_t want[CUSTOM_LEN];

            custom_data(p, want);
            g->others[p].custom_ok = e->data_len == CUSTOM_LEN &&
                                     memcmp(e->data, want, CUSTOM_LEN) == 0 &&
                                     e->flags == NET_SEND_RELIABLE;
        }
        break;
    default:
        break;
    }
}

/* One slot's part of a LOOKUP line: its name and state result, and with `marker` whether the
 * state carries a ship marker. */
static void print_slot_lookup(const char *who, int32_t slot, int marker)
{
    const char *name;
    NET_ShipState state;
    int32_t rc;

    printf(" %s=%d", who, (int)slot);
    if (slot < 0 || slot >= MAX_SLOTS) {
        return;
    }
    name = NET_FetchPlayerName(slot);
    printf(" %s_name=", who);
    if (name == NULL) {
        printf("none");
    } else {
        print_quoted(name, (size_t)-1);
    }
    rc = NET_GetPlayerState(slot, &state);
    printf(" %s_state=%d", who, (int)rc);
    if (marker) {
        printf(" %s_marker=%s", who,
               rc == NET_OK && memcmp(state.game, "PSEC", 4) == 0 ? "yes" : "no");
    }
}

/* FNV-1a over `len` bytes, continuing from `hash`. */
static uint32_t fnv1a(uint32_t hash, const void *bytes, size_t len)
{
    const unsigned char *p = bytes;
    size_t i;

    for (i = 0; i < len; i++) {
        hash = (hash ^ p[i]) * 16777619u;
    }
    return hash;
}

/* --lookups-all: every slot's name, state result and state hash (field by field, so padding
 * never counts), and the owner of every object seen so far. */
static void print_all_lookups(const struct game *g)
{
    int32_t slot;
    int i;

    for (slot = 0; slot < MAX_SLOTS; slot++) {
        const char *name = NET_FetchPlayerName(slot);
        NET_ShipState state;
        int32_t rc = NET_GetPlayerState(slot, &state);

        printf(" s%d=", (int)slot);
        if (name == NULL) {
            printf("none");
        } else {
            print_quoted(name, (size_t)-1);
        }
        printf("/%d", (int)rc);
        if (rc == NET_OK) {
            uint32_t hash = 2166136261u;

            hash = fnv1a(hash, state.pos, sizeof state.pos);
            hash = fnv1a(hash, state.orient, sizeof state.orient);
            hash = fnv1a(hash, state.vel, sizeof state.vel);
            hash = fnv1a(hash, state.game, sizeof state.game);
            printf("/%08x", (unsigned)hash);
        }
    }
    printf(" owners=");
    for (i = 0; i < g->object_count; i++) {
        printf("%s%u:%d", i > 0 ? "," : "", (unsigned)g->objects[i],
               (int)NET_FetchOwner(g->objects[i]));
    }
}

/* --lookups: what the game's lookups answer while it handles event `e` (after note_event, so
 * the own slot of a CONNECTED event is known). Only answers that do not depend on which frame a
 * state came in: demo playback runs its own frames. */
static void print_lookups(const struct game *g, const NET_Event *e)
{
    printf("LOOKUP");
    print_slot_lookup("player", e->player_id, 0);
    print_slot_lookup("own", g->slot, 1);
    printf(" owner=%d", e->object_id != 0 ? (int)NET_FetchOwner(e->object_id) : -9);
    if (g->opt.lookups > 1) {
        print_all_lookups(g);
    }
    printf("\n");
    fflush(stdout);
}

/* Poll and print every waiting event. Returns how many there were. */
static int poll_events(struct game *g)
{
    NET_Event e;
    int count = 0;
    int32_t rc;

    while ((rc = NET_PollEvent(&e)) == 1) {
        print_event(&e);
        note_event(g, &e);
        if (g->opt.lookups) {
            print_lookups(g, &e);
        }
        count++;
    }
    if (rc < 0) {
        printf("POLL rc=%d error=", (int)rc);
        print_quoted(NET_GetLastError(), (size_t)-1);
        printf("\n");
        fflush(stdout);
    }
    return count;
}

/* ----- the game's own actions ------------------------------------------------------------------- */

static int other_players_seated(const struct game *g)
{
    int32_t s;
    int count = 0;

    for (s = 0; s < MAX_SLOTS; s++) {
        if (is_other_slot(g, s) && NET_FetchPlayerName(s) != NULL) {
            count++;
        }
    }
    return count;
}

/* Print the result of one game call. */
static void report_act(const char *what, int32_t rc, uint32_t object_id)
{
    printf("ACT %s rc=%d object=%u\n", what, (int)rc, (unsigned)object_id);
    fflush(stdout);
}

/* Everything the game sends once the others are seated (see the header comment). */
static void act(struct game *g)
{
    const int32_t s = g->slot;
    const float fs = (float)s;
    char line[128], unreliable[64];
    float fire_pos[3] = {-5.0f, -5.0f, -5.0f};
    float laser_dir[3] = {0.0f, 0.0f, 1.0f};
    float object_pos[3], object_orient[4] = {0.0f, 0.6f, 0.0f, 0.8f};
    float missile_pos[3], missile_dir[3] = {1.0f, 0.0f, 0.0f};
    float extra_pos[3], origin[3];
    uint8_t data[CUSTOM_LEN];

    object_pos[0] = missile_pos[0] = extra_pos[0] = origin[0] = fs;
    object_pos[1] = 10.0f;
    object_pos[2] = 20.0f;
    missile_pos[1] = 11.0f;
    missile_pos[2] = 21.0f;
    extra_pos[1] = 12.0f;
    extra_pos[2] = 22.0f;
    origin[1] = 13.0f;
    origin[2] = 23.0f;

    snprintf(line, sizeof line, "say hello from %s", g->opt.name);
    console(line, NULL, 0);
    report_act("object",
               NET_RmEvCreateObject(OBJECT_ID_BASE + (uint32_t)s, 11, object_pos, object_orient,
                                    0xA5000000u + (uint32_t)s),
               OBJECT_ID_BASE + (uint32_t)s);
    report_act("missile",
               NET_RmEvCreateMissile(MISSILE_ID_BASE + (uint32_t)s, 12, missile_pos, missile_dir,
                                     laser_id(s)),
               MISSILE_ID_BASE + (uint32_t)s);
    report_act("extra", NET_RmEvCreateExtra(EXTRA_ID_BASE + (uint32_t)s, (uint16_t)(13 + s),
                                            extra_pos),
               EXTRA_ID_BASE + (uint32_t)s);
    report_act("particle", NET_RmEvParticleObject((uint16_t)(14 + s), origin), 0);
    report_act("kill", NET_RmEvKillObject(OBJECT_ID_BASE + (uint32_t)s, 9),
               OBJECT_ID_BASE + (uint32_t)s);
    snprintf(unreliable, sizeof unreliable, "unreliable from %s", g->opt.name);
    report_act("unreliable_custom",
               NET_RmEvCustom((uint16_t)(UNRELIABLE_TYPE_BASE + s), unreliable,
                              strlen(unreliable), 0),
               0);
    report_act("laser", NET_RmEvCreateLaser(laser_id(s), LASER_CLASS, fire_pos, laser_dir),
               laser_id(s));
    custom_data(s, data);
    report_act("custom",
               NET_RmEvCustom((uint16_t)(CUSTOM_TYPE_BASE + s), data, sizeof data,
                              NET_SEND_RELIABLE),
               0);
    g->acted = 1;
    g->acted_frame = g->frame;
}

/* Whether finishing needs a state of the player named `name` (always, unless --near says its
 * ship is too far away). */
static int needs_state_of(const struct game *g, const char *name)
{
    float mine[3], theirs[3];
    double dx, dy, dz;

    if (g->opt.near < 0.0) {
        return 1;
    }
    base_of(g->opt.name, mine);
    base_of(name, theirs);
    dx = (double)theirs[0] - mine[0];
    dy = (double)theirs[1] - mine[1];
    dz = (double)theirs[2] - mine[2];
    return dx * dx + dy * dy + dz * dz <= g->opt.near * g->opt.near;
}

/* Whether the last text from `slot` was "hello from NAME" with the slot's name then, or (it came
 * before the player's name) is with the slot's name `name` now. */
static int text_ok(const struct game *g, int32_t slot, const char *name)
{
    char want[NET_EVENT_TEXT_LEN];

    if (g->others[slot].text_ok) {
        return 1;
    }
    snprintf(want, sizeof want, "hello from %s", name);
    return g->others[slot].text_seen && strcmp(g->others[slot].text, want) == 0;
}

/* Whether every expected other player sent everything, and its state carries a good marker
 * (and this game's own sends went through at least one NETs_MaintainNet since it acted). */
static int is_complete(const struct game *g)
{
    int32_t s;
    int done = 0;

    if (!g->acted || g->frame <= g->acted_frame || g->opt.expect <= 0) {
        return 0;
    }
    for (s = 0; s < MAX_SLOTS; s++) {
        const char *name;
        NET_ShipState state;
        uint32_t frame;

        if (!is_other_slot(g, s) || (name = NET_FetchPlayerName(s)) == NULL) {
            continue;
        }
        if (text_ok(g, s, name) && g->others[s].laser_ok && g->others[s].custom_ok &&
            (!needs_state_of(g, name) || (NET_GetPlayerState(s, &state) == NET_OK &&
                                          check_marker(s, name, &state, &frame) == NULL))) {
            done++;
        }
    }
    return done >= g->opt.expect;
}

/* ----- the summary -------------------------------------------------------------------------------- */

static void take_snapshot(struct game *g)
{
    struct snapshot *snap = &g->snap;
    int32_t s;
    int i;

    memset(snap, 0, sizeof *snap);
    snap->taken = 1;
    for (s = 0; s < MAX_SLOTS; s++) {
        const char *name;

        if (!is_other_slot(g, s) || (name = NET_FetchPlayerName(s)) == NULL) {
            continue;
        }
        snap->players[s].present = 1;
        snprintf(snap->players[s].name, sizeof snap->players[s].name, "%s", name);
        snap->players[s].state_rc = NET_GetPlayerState(s, &snap->players[s].state);
    }
    for (i = 0; i < g->object_count; i++) {
        snap->owners[i] = NET_FetchOwner(g->objects[i]);
    }
}

static void print_summary(const struct game *g, const char *mode, int complete)
{
    const struct snapshot *snap = &g->snap;
    int32_t s;
    int i;

    printf("SUMMARY mode=%s slot=%d name=", mode, (int)g->slot);
    print_quoted(g->opt.name != NULL ? g->opt.name : "", (size_t)-1);
    printf(" frames=%u callback_calls=%ld reentry=%d complete=%s\n", (unsigned)g->frame,
           g->callback_calls, (int)g->reentry_rc, complete ? "yes" : "no");
    for (s = 0; s < MAX_SLOTS; s++) {
        const NET_ShipState *state = &snap->players[s].state;
        const char *wrong;
        uint32_t frame = 0;

        if (!snap->players[s].present) {
            continue;
        }
        printf("PLAYER slot=%d name=", (int)s);
        print_quoted(snap->players[s].name, sizeof snap->players[s].name);
        if (snap->players[s].state_rc != NET_OK) {
            printf(" state=err(%d) marker=none frame=0 pos=0,0,0\n",
                   (int)snap->players[s].state_rc);
            continue;
        }
        wrong = check_marker(s, snap->players[s].name, state, &frame);
        if (wrong == NULL) {
            printf(" state=ok marker=ok");
        } else {
            printf(" state=ok marker=bad(%s)", wrong);
        }
        printf(" frame=%u pos=%g,%g,%g\n", (unsigned)frame, state->pos[0], state->pos[1],
               state->pos[2]);
    }
    for (i = 0; i < g->object_count; i++) {
        printf("OWNER object=%u owner=%d\n", (unsigned)g->objects[i], (int)snap->owners[i]);
    }
    printf("SUMMARY_END\n");
    fflush(stdout);
}

static int parse_base(char *text);

/* `@pos [WHO=]X,Y,Z`: replace WHO's entry of the --pos table (or add one). The names are kept
 * in a buffer of their own, since the control line's buffer is reused. */
static int move_base(const char *text)
{
    static char names[MAX_BASES][64];
    char copy[128];
    int i, added;
    const char *who;

    if (strlen(text) >= sizeof copy || base_count == MAX_BASES) {
        return 0;
    }
    strcpy(copy, text);
    if (!parse_base(copy)) {
        return 0;
    }
    added = base_count - 1;
    if (bases[added].name != NULL) {
        if (strlen(bases[added].name) >= sizeof names[0]) {
            base_count--;
            return 0;
        }
        strcpy(names[added], bases[added].name);
        bases[added].name = names[added];
    }
    who = bases[added].name != NULL ? bases[added].name : own_name;
    for (i = 0; i < added; i++) {
        const char *other = bases[i].name != NULL ? bases[i].name : own_name;

        if (who != NULL && other != NULL && strcmp(who, other) == 0) {
            memcpy(bases[i].pos, bases[added].pos, sizeof bases[i].pos);
            base_count--;
            return 1;
        }
    }
    return 1;
}

/* ----- --control and the numbered series -------------------------------------------------------- */

static int parse_number(const char *text, long *out);
static void send_one_series(struct game *g);

/* @unreliable: one unreliable custom event UNRELIABLE_SERIES_TYPE (the number, 4 bytes
 * little-endian, then the name), reported as an UNRELIABLE line. */
static void send_one_unreliable(struct game *g)
{
    uint8_t data[4 + MARKER_NAME_MAX];
    size_t name_len = strlen(g->opt.name);
    uint32_t n = g->unreliable_next++;
    int32_t rc;

    data[0] = (uint8_t)(n & 0xff);
    data[1] = (uint8_t)((n >> 8) & 0xff);
    data[2] = (uint8_t)((n >> 16) & 0xff);
    data[3] = (uint8_t)((n >> 24) & 0xff);
    memcpy(data + 4, g->opt.name, name_len);
    rc = NET_RmEvCustom(UNRELIABLE_SERIES_TYPE, data, 4 + name_len, 0);
    printf("UNRELIABLE n=%u rc=%d slot=%d\n", (unsigned)n, (int)rc, (int)g->slot);
    fflush(stdout);
}

/* One line from stdin: a control word or a console line. */
static void control_line(struct game *g, const char *line)
{
    printf("CONTROL line=");
    print_quoted(line, (size_t)-1);
    printf("\n");
    fflush(stdout);
    if (strcmp(line, "@quit") == 0) {
        g->quit = 1;
    } else if (strcmp(line, "@summary") == 0) {
        take_snapshot(g);
        print_summary(g, "live", is_complete(g));
    } else if (strcmp(line, "@series on") == 0) {
        g->series_on = 1;
        g->series_due = now_ms();
    } else if (strcmp(line, "@series off") == 0) {
        g->series_on = 0;
    } else if (strncmp(line, "@pos ", 5) == 0) {
        if (!move_base(line + 5)) {
            printf("CONTROL bad @pos\n");
            fflush(stdout);
        }
    } else if (strncmp(line, "@burst ", 7) == 0 || strncmp(line, "@unreliable ", 12) == 0) {
        int unreliable = line[1] == 'u';
        long k;

        if (!parse_number(line + (unreliable ? 12 : 7), &k) || k > 1000) {
            printf("CONTROL bad count\n");
            fflush(stdout);
            return;
        }
        for (; k > 0; k--) {
            if (unreliable) {
                send_one_unreliable(g);
            } else {
                send_one_series(g);
            }
        }
    } else if (line[0] == '@') {
        printf("CONTROL unknown control word\n");
        fflush(stdout);
    } else if (line[0] != '\0') {
        console(line, NULL, 0);
    }
}

/* Read whatever stdin holds without waiting and handle every complete line; the end of stdin
 * is @quit. */
static void read_control(struct game *g)
{
    for (;;) {
        struct pollfd pfd;
        ssize_t n;
        char *newline;

        pfd.fd = 0;
        pfd.events = POLLIN;
        pfd.revents = 0;
        if (poll(&pfd, 1, 0) <= 0 || (pfd.revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
            return;
        }
        n = read(0, g->control_buf + g->control_len, CONTROL_CAP - 1 - g->control_len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            printf("CONTROL eof\n");
            fflush(stdout);
            g->quit = 1;
            return;
        }
        g->control_len += (size_t)n;
        while ((newline = memchr(g->control_buf, '\n', g->control_len)) != NULL) {
            size_t used = (size_t)(newline - g->control_buf) + 1;

            *newline = '\0';
            if (newline > g->control_buf && newline[-1] == '\r') {
                newline[-1] = '\0';
            }
            control_line(g, g->control_buf);
            memmove(g->control_buf, g->control_buf + used, g->control_len - used);
            g->control_len -= used;
        }
        if (g->control_len == CONTROL_CAP - 1) {
            /* A line longer than the buffer: handled in pieces. */
            g->control_buf[g->control_len] = '\0';
            control_line(g, g->control_buf);
            g->control_len = 0;
        }
        if (g->quit) {
            return;
        }
    }
}

/* While the series is on and the next number is due: queue it (reliable custom event
 * SERIES_TYPE: the number, 4 bytes little-endian, then the name) and report the attempt with
 * the players seated at that moment. A refused number is tried again when the next is due. */
static void send_one_series(struct game *g);

static void send_series(struct game *g)
{
    long k;
    long long now = now_ms();

    if (!g->series_on || g->opt.series_ms <= 0 || now < g->series_due) {
        return;
    }
    g->series_due = now + g->opt.series_ms;
    for (k = 0; k < (g->opt.series_batch > 0 ? g->opt.series_batch : 1); k++) {
        send_one_series(g);
    }
}

static void send_one_series(struct game *g)
{
    uint8_t data[256];
    char to[MAX_SLOTS * (MARKER_NAME_MAX + 10) + 1];
    size_t name_len = strlen(g->opt.name), to_len = 0;
    size_t len;
    uint32_t n = g->series_next;
    int32_t rc, s;

    data[0] = (uint8_t)(n & 0xff);
    data[1] = (uint8_t)((n >> 8) & 0xff);
    data[2] = (uint8_t)((n >> 16) & 0xff);
    data[3] = (uint8_t)((n >> 24) & 0xff);
    memcpy(data + 4, g->opt.name, name_len);
    len = 4 + name_len;
    if (g->opt.series_size > 0 && (size_t)g->opt.series_size > len) {
        memset(data + len, 0, (size_t)g->opt.series_size - len);
        len = (size_t)g->opt.series_size;
    }
    rc = NET_RmEvCustom(SERIES_TYPE, data, len, NET_SEND_RELIABLE);
    to[0] = '\0';
    for (s = 0; s < MAX_SLOTS; s++) {
        const char *name;
        int written;

        if (!is_other_slot(g, s) || (name = NET_FetchPlayerName(s)) == NULL) {
            continue;
        }
        written = snprintf(to + to_len, sizeof to - to_len, "%s%.*s", to_len > 0 ? "," : "",
                           MARKER_NAME_MAX + 8, name);
        if (written > 0 && (size_t)written < sizeof to - to_len) {
            to_len += (size_t)written;
        }
    }
    printf("SERIES n=%u rc=%d slot=%d to=", (unsigned)n, (int)rc, (int)g->slot);
    print_quoted(to, sizeof to);
    printf("\n");
    fflush(stdout);
    if (rc == NET_OK) {
        g->series_next++;
    }
}

/* ----- the two modes -------------------------------------------------------------------------------- */

/* Connect: the console's `connect H:P` with --peer, NETs_Connect() without. */
static int32_t start_connect(struct game *g)
{
    char line[300];
    int32_t rc;

    g->connects_done++;
    if (g->opt.peer != NULL) {
        snprintf(line, sizeof line, "connect %s", g->opt.peer);
        rc = console(line, NULL, 0);
    } else {
        rc = NETs_Connect();
        printf("ACT connect rc=%d\n", (int)rc);
    }
    fflush(stdout);
    return rc;
}

static int run_live(struct game *g)
{
    static char status[CONSOLE_CAP];
    int32_t rc;
    long long start, deadline, linger_until = 0;
    int summarized = 0, complete = 0;
    int i;

    g->live = 1;
    for (i = 0; i < g->opt.exec_count; i++) {
        if (console(g->opt.execs[i], NULL, 0) != NET_OK) {
            return 2;
        }
    }
    rc = NET_SetPlayerName(g->opt.name);
    printf("ACT name rc=%d\n", (int)rc);
    if (rc != NET_OK) {
        return 2;
    }
    rc = NET_SetObjectPositionCallback(object_position, g);
    printf("ACT position_callback rc=%d\n", (int)rc);
    if (start_connect(g) != NET_OK) {
        return 2;
    }

    start = now_ms();
    deadline = start + g->opt.duration_ms;
    for (;;) {
        NET_ShipState state;
        long long now;

        g->frame++;
        make_state(g->connected ? g->slot : 255, g->frame, g->opt.name, &state);
        rc = NET_SetLocalState(&state);
        if (rc != NET_OK) {
            printf("ACT state rc=%d frame=%u\n", (int)rc, (unsigned)g->frame);
        }
        NETs_MaintainNet();
        poll_events(g);
        if (g->connect_again) {
            g->connect_again = 0;
            if (start_connect(g) != NET_OK) {
                g->gave_up = 1;
            }
        }
        if (g->connected && !g->joined) {
            rc = NETs_Join();
            printf("ACT join rc=%d slot=%d\n", (int)rc, (int)g->slot);
            fflush(stdout);
            g->joined = 1;
        }
        if (g->connected && !g->acted && other_players_seated(g) >= g->opt.expect) {
            act(g);
        }
        if (g->opt.control) {
            read_control(g);
            send_series(g);
        }
        now = now_ms();
        if (!summarized) {
            complete = is_complete(g);
            if (complete || g->gave_up || now >= deadline || g->quit) {
                take_snapshot(g);
                print_summary(g, "live", complete);
                summarized = 1;
                linger_until = complete ? now + g->opt.linger_ms : now;
            }
        }
        if (g->opt.control ? g->quit : summarized && now >= linger_until) {
            break;
        }
        sleep_ms(g->opt.frame_ms);
    }

    printf("END frames=%u callback_calls=%ld\n", (unsigned)g->frame, g->callback_calls);
    if (NET_ConsoleExec("status", status, sizeof status) == NET_OK) {
        printf("STATUS text=");
        print_quoted(status, sizeof status);
        printf("\n");
    }
    fflush(stdout);
    /* Whatever was polled so far is exactly what a recording holds: stop it now. */
    if (demo_state_is("recording")) {
        static char reply[CONSOLE_CAP];

        rc = NET_ConsoleExec("stop", reply, sizeof reply);
        printf("STOP rc=%d reply=", (int)rc);
        print_quoted(reply, sizeof reply);
        printf("\n");
        fflush(stdout);
    }
    return 0;
}

static int run_play(struct game *g)
{
    static char reply[CONSOLE_CAP];
    char line[600];
    long long deadline;
    int32_t rc;

    snprintf(line, sizeof line, "play %s", g->opt.play);
    if (console(line, NULL, 0) != NET_OK) {
        return 2;
    }
    deadline = now_ms() + g->opt.duration_ms;
    for (;;) {
        NETs_MaintainNet();
        poll_events(g);
        g->frame++;
        if (!demo_state_is("playing")) {
            break; /* the maintain call above handed out the last items, all polled now */
        }
        /* The player views (names, states, owners) are the demo's only while it plays. */
        take_snapshot(g);
        if (now_ms() >= deadline) {
            printf("TIMEOUT playback still running after %ld ms\n", g->opt.duration_ms);
            break;
        }
        sleep_ms(g->opt.frame_ms);
    }
    print_summary(g, "play", 0);
    rc = NET_ConsoleExec("stop", reply, sizeof reply);
    printf("STOP rc=%d reply=", (int)rc);
    print_quoted(reply, sizeof reply);
    printf("\n");
    fflush(stdout);
    return 0;
}

/* ----- main ------------------------------------------------------------------------------------------- */

static int usage(const char *why)
{
    fprintf(stderr,
            "peer_game: %s\n"
            "usage: peer_game --name NAME [--exec LINE]... [--peer HOST:PORT] [--expect N]\n"
            "                 [--duration MS] [--linger MS] [--frame-ms MS] [--hostile-callback]\n"
            "                 [--pos [WHO=]X,Y,Z]... [--near D] [--control] [--series-ms MS]\n"
            "                 [--lookups] [--connect-tries N] [--series-size B]\n"
            "                 [--series-batch K] [--lookups-all]\n"
            "       peer_game --play FILE [--duration MS] [--frame-ms MS] [--lookups]\n"
            "                 [--lookups-all]\n",
            why);
    return 2;
}

static int parse_number(const char *text, long *out)
{
    char *end;
    long value = strtol(text, &end, 10);

    if (end == text || *end != '\0' || value < 0) {
        return 0;
    }
    *out = value;
    return 1;
}

/* `[WHO=]X,Y,Z` into the --pos table (the text is modified: WHO ends at the '='). */
static int parse_base(char *text)
{
    char *equals = strchr(text, '='), *cursor, *end;
    int i;

    if (base_count == MAX_BASES) {
        return 0;
    }
    bases[base_count].name = NULL;
    cursor = text;
    if (equals != NULL) {
        if (equals == text) {
            return 0;
        }
        *equals = '\0';
        bases[base_count].name = text;
        cursor = equals + 1;
    }
    for (i = 0; i < 3; i++) {
        double value = strtod(cursor, &end);

        if (end == cursor || !(value >= -1e7 && value <= 1e7) ||
            *end != (i < 2 ? ',' : '\0')) {
            return 0;
        }
        bases[base_count].pos[i] = (float)value;
        cursor = end + 1;
    }
    base_count++;
    return 1;
}

int main(int argc, char **argv)
{
    static struct game g;
    struct options *opt = &g.opt;
    long expect = 0;
    int i, status;
    int32_t rc;

    opt->duration_ms = 20000;
    opt->linger_ms = 1000;
    opt->frame_ms = 10;
    opt->near = -1.0;
    opt->connect_tries = 1;
    for (i = 1; i < argc; i++) {
        const char *arg = argv[i];
        char *value = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(arg, "--hostile-callback") == 0) {
            opt->hostile_callback = 1;
            continue;
        }
        if (strcmp(arg, "--control") == 0) {
            opt->control = 1;
            continue;
        }
        if (strcmp(arg, "--lookups") == 0) {
            opt->lookups = opt->lookups > 1 ? opt->lookups : 1;
            continue;
        }
        if (strcmp(arg, "--lookups-all") == 0) {
            opt->lookups = 2;
            continue;
        }
        if (value == NULL) {
            return usage("an option without its value");
        }
        i++;
        if (strcmp(arg, "--exec") == 0) {
            if (opt->exec_count == MAX_EXECS) {
                return usage("too many --exec lines");
            }
            opt->execs[opt->exec_count++] = value;
        } else if (strcmp(arg, "--name") == 0) {
            opt->name = value;
        } else if (strcmp(arg, "--peer") == 0) {
            opt->peer = value;
        } else if (strcmp(arg, "--play") == 0) {
            opt->play = value;
        } else if (strcmp(arg, "--expect") == 0) {
            if (!parse_number(value, &expect) || expect >= MAX_SLOTS) {
                return usage("--expect takes 0-15");
            }
            opt->expect = (int)expect;
        } else if (strcmp(arg, "--duration") == 0) {
            if (!parse_number(value, &opt->duration_ms)) {
                return usage("--duration takes milliseconds");
            }
        } else if (strcmp(arg, "--linger") == 0) {
            if (!parse_number(value, &opt->linger_ms)) {
                return usage("--linger takes milliseconds");
            }
        } else if (strcmp(arg, "--frame-ms") == 0) {
            if (!parse_number(value, &opt->frame_ms) || opt->frame_ms == 0) {
                return usage("--frame-ms takes milliseconds (at least 1)");
            }
        } else if (strcmp(arg, "--pos") == 0) {
            if (!parse_base(value)) {
                return usage("--pos takes [WHO=]X,Y,Z (at most 16 of them)");
            }
        } else if (strcmp(arg, "--near") == 0) {
            char *end;

            opt->near = strtod(value, &end);
            if (end == value || *end != '\0' || !(opt->near >= 0.0)) {
                return usage("--near takes a distance (0 or more)");
            }
        } else if (strcmp(arg, "--connect-tries") == 0) {
            if (!parse_number(value, &opt->connect_tries) || opt->connect_tries == 0) {
                return usage("--connect-tries takes a count (at least 1)");
            }
        } else if (strcmp(arg, "--series-ms") == 0) {
            if (!parse_number(value, &opt->series_ms) || opt->series_ms == 0) {
                return usage("--series-ms takes milliseconds (at least 1)");
            }
        } else if (strcmp(arg, "--series-size") == 0) {
            if (!parse_number(value, &opt->series_size) || opt->series_size > 256) {
                return usage("--series-size takes a size in bytes (at most 256)");
            }
        } else if (strcmp(arg, "--series-batch") == 0) {
            if (!parse_number(value, &opt->series_batch) || opt->series_batch == 0) {
                return usage("--series-batch takes a count (at least 1)");
            }
        } else {
            return usage("unknown option");
        }
    }
    if (opt->play == NULL &&
        (opt->name == NULL || opt->name[0] == '\0' || strlen(opt->name) > MARKER_NAME_MAX)) {
        return usage("--name NAME (1-22 bytes) is required");
    }
    own_name = opt->name;

    g.slot = -1;
    rc = NET_Init();
    if (rc != NET_OK) {
        printf("INIT rc=%d error=", (int)rc);
        print_quoted(NET_GetLastError(), (size_t)-1);
        printf("\n");
        return 2;
    }
    status = opt->play != NULL ? run_play(&g) : run_live(&g);
    NET_Shutdown();
    return status;
}
