module nodefleet.local/cron-reference

go 1.24

require github.com/robfig/cron/v3 v3.0.1
