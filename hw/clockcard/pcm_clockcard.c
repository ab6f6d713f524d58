/* clockcard: a fake ALSA sound card with a real clock (an ioplug external PCM plugin).
 *
 * Why: ALSA's `file` plugin never waits and never xruns, so anything measured through
 * it is counted in samples, not in time. This card behaves like a DMA card:
 *
 * - the hardware pointer moves with CLOCK_MONOTONIC, in whole periods, from start;
 * - poll() wakes once per period (a timerfd, like a period interrupt);
 * - playback: each frame is "heard" when the clock passes it and is then written
 *   to `file` at sample index (t_heard - t0) * rate, t0 being the first start noted
 *   in `log` (kept across reopens), so a gap in time (an xrun, a drop and restart,
 *   a closed stream) is a hole of zeros in the file: the file is a time-stamped
 *   recording of the speaker. The caller removes old files before a run;
 * - an xrun is real: when the clock passes what the application wrote (playback) or
 *   the application falls a whole buffer behind (capture) the pointer reports
 *   -EPIPE, and the event is appended to `log`;
 * - playback: the thread that writes (transfers) is the one a real application's
 *   deadline rides on. Another thread that enters the running PCM (its pointer: a
 *   status or avail call) takes the PCM's lock the writer needs, and, throttled or
 *   preempted there, holds that writer up past its deadline: a "foreign" line notes
 *   the first few such calls (the writer is the thread with the last 8 transfers);
 * - snd_pcm_drop() discards what was written and not yet heard;
 * - capture delivers `infile` (raw S16, looped) or silence, paced by the clock;
 * - a room: with `room` (a file of float32 taps at the card's rate, the acoustic delay
 *   as leading zeros), the capture also hears the speaker: each captured frame adds
 *   the taps convolved with what the playback card of the same process played (its
 *   channel 0) up to the frame's own time. That is what the speaker had really played
 *   by then, by the card's clock: the recording for what it heard, its buffer for what
 *   is playing now, silence where it underran or was dropped. So an echo canceller
 *   downstream is aligned only as well as the application's own time stamps are.
 *
 * `log` lines: "<event> <monotonic ns> [details]", events t0 (file index 0), prepare (with
 * the rate, period and buffer the application chose), open, start, stop, xrun. A capture's
 * start line adds the `infile` frame its first captured frame is read from, so the
 * reader knows when each frame of the file was captured.
 *
 *   pcm_type.clockcard { lib "/abs/path/libasound_module_pcm_clockcard.so" }
 *   pcm.spk { type clockcard file "/abs/out.raw" log "/abs/out.log" }
 *   pcm.mic { type clockcard infile "/abs/in.raw" log "/abs/in.log" room "/abs/taps.f32" }
 */
#define _GNU_SOURCE
#include <alsa/asoundlib.h>
#include <alsa/pcm_external.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

struct card {
	snd_pcm_ioplug_t io;
	int timer;            /* period "interrupt" */
	int out_fd;           /* playback recording, or -1 */
	int in_fd;            /* capture source, or -1 */
	FILE *log;
	int running;
	int64_t first_ns;     /* when file index 0 was heard (first start), 0 = not yet */
	int64_t start_ns;     /* this run's start */
	int64_t run_base;     /* file index of this run's first frame */
	uint64_t appl;        /* frames the application transferred since prepare */
	uint64_t hw;          /* frames the card consumed / produced since prepare */
	unsigned char *buf;   /* playback: buffer_size frames not yet heard */
	size_t frame_bytes;
	float *taps;          /* capture: the room's taps after its delay, or NULL */
	size_t ntaps;
	size_t skip;          /* the room's delay: the taps' leading zeros */
	float *hist;          /* capture: the speaker's frames one transfer needs */
	int16_t *raw;
	size_t room_cap;      /* frames hist and raw hold */
	pid_t writer;         /* playback: the thread of the last transfer */
	unsigned writes;      /* its transfers in a row (the writer is settled from 8) */
	unsigned foreign;     /* other threads' pointer calls noted since prepare */
};

#define SETTLED_WRITES 8
#define FOREIGN_NOTES 16

/* The room joins the two cards of one process (asym's playback and capture): the
 * capture reads the playback card's state from its own thread, under this lock, which
 * the playback takes wherever it changes what it holds. */
static pthread_mutex_t room_lock = PTHREAD_MUTEX_INITIALIZER;
static struct card *room_speaker; /* the playback card with a recording, or NULL */

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void note(struct card *c, const char *event, int64_t ns)
{
	if (!c->log)
		return;
	fprintf(c->log, "%s %lld\n", event, (long long)ns);
	fflush(c->log);
}

/* Frames in `ns` nanoseconds at `rate`, rounded down: whole seconds and the rest apart,
 * since ns * rate overflows int64 after about 53 h at 48 kHz. ns >= 0. */
static int64_t frames_in(int64_t ns, unsigned int rate)
{
	return ns / 1000000000LL * (int64_t)rate + ns % 1000000000LL * (int64_t)rate / 1000000000LL;
}

/* Frames the clock has reached in this run, in whole periods (the DMA pointer). */
static uint64_t clock_hw(struct card *c)
{
	int64_t elapsed = mono_ns() - c->start_ns;
	int64_t frames = elapsed < 0 ? 0 : frames_in(elapsed, c->io.rate);
	frames -= frames % (int64_t)c->io.period_size;
	return frames < 0 ? 0 : (uint64_t)frames;
}

enum { TICK_OFF, TICK_PERIODS, TICK_NOW };

/* The "interrupt": every period while running; TICK_NOW keeps poll() awake (like the
 * kernel's POLLERR after an xrun, or room to write before start) until it is handled. */
static void tick(struct card *c, int how)
{
	struct itimerspec its;
	memset(&its, 0, sizeof(its));
	if (how == TICK_NOW) {
		its.it_value.tv_nsec = 1;
	} else if (how == TICK_PERIODS) {
		int64_t ns = (int64_t)c->io.period_size * 1000000000LL / c->io.rate;
		its.it_interval.tv_sec = ns / 1000000000LL;
		its.it_interval.tv_nsec = ns % 1000000000LL;
		its.it_value = its.it_interval;
	}
	timerfd_settime(c->timer, 0, &its, NULL);
}

/* Playback: the frames [hw, upto) leave the speaker, i.e. go to the recording. */
static void hear(struct card *c, uint64_t upto)
{
	snd_pcm_uframes_t size = c->io.buffer_size;
	while (c->hw < upto) {
		uint64_t at = c->hw % size;
		uint64_t n = upto - c->hw;
		if (n > size - at)
			n = size - at;
		if (c->out_fd >= 0) {
			off_t off = (off_t)(c->run_base + (int64_t)c->hw) * (off_t)c->frame_bytes;
			ssize_t done = pwrite(c->out_fd, c->buf + at * c->frame_bytes, n * c->frame_bytes, off);
			(void)done; /* a full disk only loses the recording */
		}
		c->hw += n;
	}
}

/* Like a DMA card: the stream stops where it ran out, until the application prepares it. */
static snd_pcm_sframes_t xrun(struct card *c)
{
	c->running = 0;
	tick(c, TICK_NOW);
	note(c, "xrun", mono_ns());
	return -EPIPE;
}

static snd_pcm_sframes_t pointer_locked(snd_pcm_ioplug_t *io);

static snd_pcm_sframes_t card_pointer(snd_pcm_ioplug_t *io)
{
	pthread_mutex_lock(&room_lock);
	snd_pcm_sframes_t r = pointer_locked(io);
	pthread_mutex_unlock(&room_lock);
	return r;
}

static snd_pcm_sframes_t pointer_locked(snd_pcm_ioplug_t *io)
{
	struct card *c = io->private_data;
	if (!c->running)
		return (snd_pcm_sframes_t)(c->hw % io->buffer_size);
	uint64_t now = clock_hw(c);
	if (io->stream == SND_PCM_STREAM_PLAYBACK) {
		pid_t me = (pid_t)syscall(SYS_gettid);
		if (c->writes >= SETTLED_WRITES && me != c->writer && c->foreign < FOREIGN_NOTES) {
			c->foreign++;
			if (c->log) {
				fprintf(c->log, "foreign %lld %d\n", (long long)mono_ns(), (int)me);
				fflush(c->log);
			}
		}
		if (now > c->appl) { /* the clock passed what was written: underrun */
			hear(c, c->appl);
			return xrun(c);
		}
		hear(c, now);
	} else {
		if (now > c->appl + io->buffer_size) { /* nobody read a whole buffer: overrun */
			return xrun(c);
		}
		c->hw = now;
	}
	return (snd_pcm_sframes_t)(c->hw % io->buffer_size);
}


/* The speaker's channel 0 at file indices [from, from + n) into c->raw: what the playback
 * card heard (its recording, one read), then what it is playing (its buffer) over it;
 * zeros where nothing was written. c->raw holds n frames of up to 8 channels. */
static void speaker_frames(struct card *c, struct card *spk, int64_t from, size_t n)
{
	size_t fb = spk->frame_bytes, lead = from < 0 ? (size_t)(-from) : 0;
	unsigned char *bytes = (unsigned char *)c->raw;
	memset(bytes, 0, n * fb);
	if (lead < n) {
		ssize_t got = pread(spk->out_fd, bytes + lead * fb, (n - lead) * fb,
				    (off_t)(from + (int64_t)lead) * (off_t)fb);
		(void)got; /* short: the rest was never heard, silence */
	}
	if (spk->running && spk->buf) {
		for (size_t i = lead; i < n; i++) {
			int64_t p = from + (int64_t)i - spk->run_base;
			if (p >= (int64_t)spk->hw && p < (int64_t)spk->appl)
				memcpy(bytes + i * fb, spk->buf + ((uint64_t)p % spk->io.buffer_size) * fb, fb);
		}
	}
	for (size_t i = 0; i < n; i++) /* channel 0, in place (i * fb >= i * 2) */
		memmove(&c->raw[i], bytes + i * fb, sizeof(int16_t));
}

/* Capture: add what the mic hears of the speaker to `size` frames about to be delivered. */
static void room_echo(struct card *c, int16_t *app, snd_pcm_uframes_t size)
{
	size_t need = size + c->ntaps;
	if (need > c->room_cap) {
		free(c->hist);
		free(c->raw);
		c->hist = malloc(need * sizeof(float));
		c->raw = malloc(need * 8 * sizeof(int16_t));
		c->room_cap = c->hist && c->raw ? need : 0;
		if (!c->room_cap)
			return;
	}
	/* the time of the first frame, and the speaker's file index heard then */
	int64_t first = c->start_ns + (int64_t)(c->appl * 1000000000ULL / c->io.rate);
	pthread_mutex_lock(&room_lock);
	struct card *spk = room_speaker;
	int ok = spk && spk->first_ns && spk->io.rate == c->io.rate && spk->frame_bytes >= 2;
	if (ok) {
		int64_t now_at = first >= spk->first_ns ? frames_in(first - spk->first_ns, c->io.rate)
							: -frames_in(spk->first_ns - first, c->io.rate);
		speaker_frames(c, spk, now_at - (int64_t)c->skip - (int64_t)c->ntaps + 1,
			       size + c->ntaps - 1);
	}
	pthread_mutex_unlock(&room_lock);
	if (!ok)
		return;
	for (size_t i = 0; i < size + c->ntaps - 1; i++)
		c->hist[i] = (float)c->raw[i];
	unsigned int ch = c->io.channels;
	for (snd_pcm_uframes_t k = 0; k < size; k++) {
		/* hist[k + ntaps - 1] is the speaker at this frame's time minus the delay */
		const float *h = c->hist + k + c->ntaps - 1;
		float acc = 0.0f;
		for (size_t m = 0; m < c->ntaps; m++)
			acc += c->taps[m] * h[-(ptrdiff_t)m];
		for (unsigned int j = 0; j < ch; j++) {
			float v = (float)app[k * ch + j] + acc;
			app[k * ch + j] = (int16_t)(v > 32767.0f ? 32767 : v < -32768.0f ? -32768 : (int)lrintf(v));
		}
	}
}

/* The room's taps: float32 at the card's rate, the delay as leading zeros. */
static int load_room(struct card *c, const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		SNDERR("clockcard: cannot open room %s", path);
		return -errno;
	}
	size_t cap = 192000, n = 0; /* up to 4 s of taps at 48 kHz */
	float *all = malloc(cap * sizeof(float));
	if (all)
		n = fread(all, sizeof(float), cap, f);
	fclose(f);
	size_t skip = 0;
	while (all && skip < n && all[skip] == 0.0f)
		skip++;
	if (!all || skip == n) {
		free(all);
		SNDERR("clockcard: room %s holds no tap", path);
		return -EINVAL;
	}
	memmove(all, all + skip, (n - skip) * sizeof(float));
	c->taps = all;
	c->ntaps = n - skip;
	c->skip = skip;
	return 0;
}

static snd_pcm_sframes_t card_transfer(snd_pcm_ioplug_t *io, const snd_pcm_channel_area_t *areas,
				       snd_pcm_uframes_t offset, snd_pcm_uframes_t size)
{
	struct card *c = io->private_data;
	unsigned char *app = (unsigned char *)areas[0].addr + (areas[0].first + areas[0].step * offset) / 8;
	size_t bytes = size * c->frame_bytes;
	if (io->stream == SND_PCM_STREAM_PLAYBACK) {
		uint64_t at = c->appl % io->buffer_size;
		size_t first = (io->buffer_size - at) * c->frame_bytes;
		if (first > bytes)
			first = bytes;
		pid_t me = (pid_t)syscall(SYS_gettid);
		pthread_mutex_lock(&room_lock);
		c->writes = me == c->writer ? c->writes + 1 : 1;
		c->writer = me;
		memcpy(c->buf + at * c->frame_bytes, app, first);
		memcpy(c->buf, app + first, bytes - first);
		c->appl += size;
		pthread_mutex_unlock(&room_lock);
		return (snd_pcm_sframes_t)size;
	} else if (c->in_fd >= 0) {
		size_t got = 0;
		while (got < bytes) {
			ssize_t n = read(c->in_fd, app + got, bytes - got);
			if (n <= 0) { /* end of file: loop it; an empty file gives silence */
				if (n == 0 && got == 0 && lseek(c->in_fd, 0, SEEK_CUR) == 0)
					break;
				lseek(c->in_fd, 0, SEEK_SET);
				if (n < 0)
					break;
				continue;
			}
			got += (size_t)n;
		}
		memset(app + got, 0, bytes - got);
	} else {
		memset(app, 0, bytes);
	}
	if (c->taps)
		room_echo(c, (int16_t *)app, size);
	c->appl += size;
	return (snd_pcm_sframes_t)size;
}

static int card_start(snd_pcm_ioplug_t *io)
{
	struct card *c = io->private_data;
	pthread_mutex_lock(&room_lock);
	c->start_ns = mono_ns();
	if (!c->first_ns) {
		c->first_ns = c->start_ns;
		note(c, "t0", c->first_ns);
	}
	c->run_base = frames_in(c->start_ns - c->first_ns, io->rate);
	c->running = 1;
	if (io->stream == SND_PCM_STREAM_CAPTURE && c->log) {
		off_t in = c->in_fd >= 0 ? lseek(c->in_fd, 0, SEEK_CUR) : 0;
		fprintf(c->log, "start %lld %lld\n", (long long)c->start_ns,
			(long long)(in / (off_t)c->frame_bytes));
		fflush(c->log);
	} else {
		note(c, "start", c->start_ns);
	}
	tick(c, TICK_PERIODS);
	pthread_mutex_unlock(&room_lock);
	return 0;
}

static int card_stop(snd_pcm_ioplug_t *io)
{
	struct card *c = io->private_data;
	pthread_mutex_lock(&room_lock);
	if (c->running && io->stream == SND_PCM_STREAM_PLAYBACK) {
		uint64_t now = clock_hw(c);
		hear(c, now < c->appl ? now : c->appl); /* what is left is dropped */
	}
	c->running = 0;
	tick(c, TICK_OFF);
	note(c, "stop", mono_ns());
	pthread_mutex_unlock(&room_lock);
	return 0;
}

static int card_prepare(snd_pcm_ioplug_t *io)
{
	struct card *c = io->private_data;
	pthread_mutex_lock(&room_lock);
	c->running = 0;
	c->appl = c->hw = 0;
	c->writer = 0;
	c->writes = c->foreign = 0;
	tick(c, TICK_NOW);
	free(c->buf);
	c->frame_bytes = (size_t)io->channels * 2;
	c->buf = calloc(io->buffer_size, c->frame_bytes);
	pthread_mutex_unlock(&room_lock);
	if (c->log) { /* the geometry the application chose, for the reader of the log */
		fprintf(c->log, "prepare %lld rate=%u period=%lu buffer=%lu\n", (long long)mono_ns(),
			io->rate, (unsigned long)io->period_size, (unsigned long)io->buffer_size);
		fflush(c->log);
	}
	return c->buf ? 0 : -ENOMEM;
}

static int card_poll_revents(snd_pcm_ioplug_t *io, struct pollfd *pfd, unsigned int nfds,
			     unsigned short *revents)
{
	struct card *c = io->private_data;
	uint64_t ticks;
	(void)nfds;
	if (c->running && (pfd[0].revents & POLLIN)) {
		ssize_t n = read(c->timer, &ticks, sizeof(ticks)); /* acknowledge the interrupt */
		(void)n;
	}
	snd_pcm_sframes_t avail = snd_pcm_avail_update(io->pcm);
	*revents = 0;
	if (avail < 0 || (snd_pcm_uframes_t)avail >= io->period_size || !c->running)
		*revents = io->stream == SND_PCM_STREAM_PLAYBACK ? POLLOUT : POLLIN;
	if (avail < 0)
		*revents |= POLLERR;
	return 0;
}

static int card_close(snd_pcm_ioplug_t *io)
{
	struct card *c = io->private_data;
	pthread_mutex_lock(&room_lock);
	if (room_speaker == c)
		room_speaker = NULL;
	pthread_mutex_unlock(&room_lock);
	if (c->out_fd >= 0)
		close(c->out_fd);
	if (c->in_fd >= 0)
		close(c->in_fd);
	if (c->log)
		fclose(c->log);
	close(c->timer);
	free(c->buf);
	free(c->taps);
	free(c->hist);
	free(c->raw);
	free(c);
	return 0;
}

static const snd_pcm_ioplug_callback_t card_callbacks = {
	.start = card_start,
	.stop = card_stop,
	.pointer = card_pointer,
	.transfer = card_transfer,
	.prepare = card_prepare,
	.poll_revents = card_poll_revents,
	.close = card_close,
};

static int constrain(snd_pcm_ioplug_t *io)
{
	static const unsigned int access[] = {SND_PCM_ACCESS_RW_INTERLEAVED, SND_PCM_ACCESS_MMAP_INTERLEAVED};
	static const unsigned int formats[] = {SND_PCM_FORMAT_S16_LE};
	int err;
	if ((err = snd_pcm_ioplug_set_param_list(io, SND_PCM_IOPLUG_HW_ACCESS, 2, access)) < 0 ||
	    (err = snd_pcm_ioplug_set_param_list(io, SND_PCM_IOPLUG_HW_FORMAT, 1, formats)) < 0 ||
	    (err = snd_pcm_ioplug_set_param_minmax(io, SND_PCM_IOPLUG_HW_CHANNELS, 1, 8)) < 0 ||
	    (err = snd_pcm_ioplug_set_param_minmax(io, SND_PCM_IOPLUG_HW_RATE, 8000, 192000)) < 0 ||
	    (err = snd_pcm_ioplug_set_param_minmax(io, SND_PCM_IOPLUG_HW_PERIOD_BYTES, 64, 1 << 20)) < 0 ||
	    (err = snd_pcm_ioplug_set_param_minmax(io, SND_PCM_IOPLUG_HW_PERIODS, 2, 64)) < 0)
		return err;
	return 0;
}

SND_PCM_PLUGIN_DEFINE_FUNC(clockcard)
{
	snd_config_iterator_t i, next;
	const char *file = NULL, *infile = NULL, *logfile = NULL, *roomfile = NULL;
	struct card *c;
	int err;
	(void)root;

	snd_config_for_each(i, next, conf) {
		snd_config_t *n = snd_config_iterator_entry(i);
		const char *id;
		if (snd_config_get_id(n, &id) < 0)
			continue;
		if (!strcmp(id, "comment") || !strcmp(id, "type") || !strcmp(id, "hint"))
			continue;
		if (!strcmp(id, "file"))
			snd_config_get_string(n, &file);
		else if (!strcmp(id, "infile"))
			snd_config_get_string(n, &infile);
		else if (!strcmp(id, "log"))
			snd_config_get_string(n, &logfile);
		else if (!strcmp(id, "room"))
			snd_config_get_string(n, &roomfile);
		else {
			SNDERR("clockcard: unknown field %s (expected file, infile, log, room)", id);
			return -EINVAL;
		}
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->out_fd = c->in_fd = -1;
	c->timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (c->timer < 0) {
		free(c);
		return -errno;
	}
	if (file && stream == SND_PCM_STREAM_PLAYBACK) /* read back by a capture's room */
		c->out_fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (roomfile && stream == SND_PCM_STREAM_CAPTURE && (err = load_room(c, roomfile)) < 0) {
		close(c->timer);
		free(c);
		return err;
	}
	if (logfile) { /* a reopened stream keeps the recording's time base: one timeline */
		FILE *old = fopen(logfile, "r");
		long long ns;
		char word[16];
		while (old && fscanf(old, "%15s %lld%*[^\n]", word, &ns) == 2) {
			if (!strcmp(word, "t0")) {
				c->first_ns = ns;
				break;
			}
		}
		if (old)
			fclose(old);
	}
	if (infile && stream == SND_PCM_STREAM_CAPTURE)
		c->in_fd = open(infile, O_RDONLY | O_CLOEXEC);
	if (logfile)
		c->log = fopen(logfile, "a");
	note(c, "open", mono_ns()); /* a stream reopen shows as a second open after a start */
	c->io.version = SND_PCM_IOPLUG_VERSION;
	c->io.name = "huxleyd clockcard (a fake card with a real clock)";
	c->io.callback = &card_callbacks;
	c->io.private_data = c;
	c->io.poll_fd = c->timer;
	c->io.poll_events = POLLIN;
	c->io.mmap_rw = 0;
	if ((err = snd_pcm_ioplug_create(&c->io, name, stream, mode)) < 0) {
		card_close(&c->io);
		return err;
	}
	if ((err = constrain(&c->io)) < 0) {
		snd_pcm_ioplug_delete(&c->io);
		return err;
	}
	if (c->out_fd >= 0) {
		pthread_mutex_lock(&room_lock);
		room_speaker = c;
		pthread_mutex_unlock(&room_lock);
	}
	*pcmp = c->io.pcm;
	return 0;
}

SND_PCM_PLUGIN_SYMBOL(clockcard);
