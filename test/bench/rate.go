package bench

import "time"

// cpuSample is a process's CPU time read at one moment.
type cpuSample struct {
	at  time.Time
	cpu time.Duration
}

// peakRate is the highest CPU use, in cores, over any span of at least
// window between two samples (samples in time order): how hard the
// busiest stretch of a round drove the process.
func peakRate(samples []cpuSample, window time.Duration) float64 {
	peak := 0.0
	j := 0
	for i := range samples {
		for j < len(samples) && samples[j].at.Sub(samples[i].at) < window {
			j++
		}
		if j == len(samples) {
			break
		}
		span := samples[j].at.Sub(samples[i].at)
		peak = max(peak, float64(samples[j].cpu-samples[i].cpu)/float64(span))
	}
	return peak
}

// warpClock is a clock that runs speed times faster than real time from
// the moment it is started, beginning at from; before that it stands at
// from. It lets a round of nightly Plans (an hour of schedule) pass in
// minutes.
type warpClock struct {
	from      time.Time
	speed     float64
	startedAt time.Time
}

func (c *warpClock) start() { c.startedAt = time.Now() }

// Now is from plus speed times the real time since start.
func (c *warpClock) Now() time.Time {
	if c.startedAt.IsZero() {
		return c.from
	}
	return c.from.Add(time.Duration(float64(time.Since(c.startedAt)) * c.speed))
}

// Since is Now minus t.
func (c *warpClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// real is how long a span of warped time d takes in real time.
func (c *warpClock) real(d time.Duration) time.Duration {
	return time.Duration(float64(d) / c.speed)
}
