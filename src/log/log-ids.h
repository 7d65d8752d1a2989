/* The journal's MESSAGE_ID= of each kind of message an operator may want
 * to find or alert on: `journalctl MESSAGE_ID=<id>`. They are fixed for
 * good (generated once, at random); autoscaled(8) lists them. */
#ifndef AUTOSCALED_LOG_IDS_H
#define AUTOSCALED_LOG_IDS_H

/* An evaluation's decision (with DECISION=, ACTION=, PROFILE=, DESIRED=,
 * CURRENT=). */
#define LOG_ID_DECISION "b81c7caec56f43b2b1a8c076ee8b6974"
/* A scale-out or scale-in that completed. */
#define LOG_ID_ACTION "6e244f44c95b46e6b21aff6538698a9e"
/* A scale-out or scale-in that failed. */
#define LOG_ID_ACTION_FAILED "8feaa4acaf984977ac40d125a865894d"
/* A reload of the configuration, done or failed. */
#define LOG_ID_RELOAD "ef888f2591b94846995f6596b92d820c"

#endif
