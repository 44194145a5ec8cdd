/* * * * * * * * * * * * * * * * * * * * * * * * * * * * * * * * */
/* Многопотоковый вариант обеда философов с использованием        */
/* сигналов реального времени и таймера для контроля              */
/* длительности обеда как пример применения средств трассировки   */
/* * * * * * * * * * * * * * * * * * * * * * * * * * * * * * * * */
/*
 * Listing 8.22 of the seed, completed: the parts the listing leaves out
 * (". . .") are written here; the traced parts and main() are the listing's,
 * with the extraction's breakage fixed (a missing "}" before the first
 * "else if"). Additions: with an argument, main() also records into a second
 * stream with a log written to that file, for `rtrace dump FILE`; `--help`
 * prints the usage, and an option or a second argument is a usage error (exit
 * 2), never taken for the log's name.
 *
 * Philosophers ask a waiter thread for their forks with a real-time signal
 * (SIGRTMIN, value no > 0), give them back with value -no; the waiter grants
 * a request when both forks are free and wakes the philosopher with a
 * semaphore. A POSIX timer (SIGRTMIN + 1) ends the dinner. libposixrt records
 * the signal events the listing prints (traceSigGeneration from sigqueue,
 * traceSigDelivery from sigwaitinfo and sigwait); traceSigCatchFunc never occurs
 * (no handler runs).
 *
 *   cc -std=c99 -pthread -I capi/include capi/examples/philosophers.c -L target/release \
 *      -lposixrt -Wl,-rpath,"$PWD/target/release" -o philosophers
 */
#define _POSIX_C_SOURCE 200809L
#include <sys/types.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <trace.h>

#define QPH 5        /* Число философов */
#define DINNER_MS 600 /* Длительность обеда */

/* Идентификаторы генерируемых пользовательских событий */
static trace_event_id_t pev1; /* Заявка на захват вилок */
static trace_event_id_t pev2; /* Захват вилок */
static trace_event_id_t pev3; /* Освобождение вилок */

static int phil_req[QPH];   /* Заявки на вилки (только поток-официант) */
static int fork_busy[QPH];  /* Занятость вилок (только поток-официант) */
static sem_t phil_sem[QPH]; /* Разрешение философу начать еду */
static volatile sig_atomic_t dinner_over;

static void pause_ms(int ms)
{
    struct timespec d;
    d.tv_sec = ms / 1000;
    d.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&d, &d) != 0 && errno == EINTR) {
    }
}

/* * * * * * * * * * * * * * * * * * * * * * */
/* Попытка выполнить заявку на захват вилок */
/* от философа номер no, если она есть */
/* * * * * * * * * * * * * * * * * * * * * * */
static void fork_lock(int no)
{
    if (!phil_req[no - 1] || fork_busy[no - 1] || fork_busy[no % QPH]) {
        return;
    }
    fork_busy[no - 1] = fork_busy[no % QPH] = 1;
    phil_req[no - 1] = 0;
    /* Сгенерируем событие – захват вилок */
    posix_trace_event(pev2, &no, sizeof(no));
    (void)sem_post(&phil_sem[no - 1]);
}

/* * * * * * * * * * * * * * * * * * * * * * * * * * * * * * */
/* Стартовая функция потока, обслуживающего заявки на захват */
/* и освобождение вилок. Заявка передается в виде значения, */
/* ассоциированного с сигналом signo. Значение no > 0 */
/* запрашивает захват вилок для философа с номером no, */
/* no < 0 – освобождение философа -no */
/* * * * * * * * * * * * * * * * * * * * * * * * * * * * * * */
void *start_waiter(void *signo)
{
    int no; /* Номер философа, приславшего заявку */
    sigset_t set;
    siginfo_t si;

    sigemptyset(&set);
    sigaddset(&set, *(int *)signo);
    for (;;) {
        if (sigwaitinfo(&set, &si) < 0) {
            if (errno == EINTR) {
                continue;
            }
            perror("SIGWAITINFO");
            return NULL;
        }
        no = si.si_value.sival_int;
        if (no == 0) { /* Обед окончен */
            return NULL;
        }
        if (no > 0) {
            /* Заявка на захват вилок. */
            /* Запомним ее ... */
            phil_req[no - 1] = 1;
            /* Сгенерируем событие – заявка на захват вилок ... */
            posix_trace_event(pev1, &no, sizeof(no));
            /* ... и попробуем выполнить заявку */
            fork_lock(no);
        } else {
            /* Освобождение вилок */
            no = -no;
            fork_busy[no - 1] = fork_busy[no % QPH] = 0;
            /* Сгенерируем событие – освобождение вилок */
            posix_trace_event(pev3, &no, sizeof(no));
            /* Соседи могли ждать этих вилок */
            fork_lock(no == 1 ? QPH : no - 1);
            fork_lock(no % QPH + 1);
        }
    }
}

static void send_waiter(int value)
{
    union sigval v;
    v.sival_int = value;
    while (sigqueue(getpid(), SIGRTMIN, v) != 0) {
        if (errno != EAGAIN) {
            perror("SIGQUEUE");
            exit(1);
        }
        pause_ms(1);
    }
}

static void *philosopher(void *arg)
{
    int no = (int)(long)arg;
    unsigned seed = (unsigned)no * 7919u;
    while (!dinner_over) {
        pause_ms(5 + (int)(rand_r(&seed) % 10)); /* Размышления */
        send_waiter(no);                           /* Заявка на вилки */
        while (sem_wait(&phil_sem[no - 1]) != 0) {
        }
        pause_ms(5 + (int)(rand_r(&seed) % 10)); /* Еда */
        send_waiter(-no);                          /* Освобождение вилок */
    }
    return NULL;
}

/* * * * * * * * * * * * * */
/* Организация обеда */
/* (бывшая функция main()) */
/* * * * * * * * * * * * * */
void *dinorg(void *dummy)
{
    static int req_signo;
    pthread_t waiter, phil[QPH];
    struct sigevent sev;
    struct itimerspec its;
    timer_t timer;
    sigset_t set;
    int i, sig;

    (void)dummy;
    req_signo = SIGRTMIN;
    for (i = 0; i < QPH; i++) {
        (void)sem_init(&phil_sem[i], 0, 0);
    }
    if ((errno = pthread_create(&waiter, NULL, start_waiter, &req_signo)) != 0) {
        perror("PTHREAD_CREATE-waiter");
        return NULL;
    }
    for (i = 0; i < QPH; i++) {
        if ((errno = pthread_create(&phil[i], NULL, philosopher, (void *)(long)(i + 1))) != 0) {
            perror("PTHREAD_CREATE-philosopher");
            return NULL;
        }
    }
    /* Таймер, отмеряющий длительность обеда */
    memset(&sev, 0, sizeof(sev));
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = SIGRTMIN + 1;
    if (timer_create(CLOCK_REALTIME, &sev, &timer) != 0) {
        perror("TIMER_CREATE");
        return NULL;
    }
    memset(&its, 0, sizeof(its));
    its.it_value.tv_sec = DINNER_MS / 1000;
    its.it_value.tv_nsec = (long)(DINNER_MS % 1000) * 1000000L;
    (void)timer_settime(timer, 0, &its, NULL);
    sigemptyset(&set);
    sigaddset(&set, SIGRTMIN + 1);
    (void)sigwait(&set, &sig);
    (void)timer_delete(timer);

    dinner_over = 1;
    for (i = 0; i < QPH; i++) {
        (void)pthread_join(phil[i], NULL);
    }
    send_waiter(0);
    (void)pthread_join(waiter, NULL);
    return (NULL);
}

/* * * * * * * * * * * * * * * * */
/* Управление трассировкой, */
/* выборка и распечатка событий */
/* * * * * * * * * * * * * * * * */
int main(int argc, char *argv[])
{
    trace_id_t trid;          /* Идентификатор потока трассировки */
    trace_event_set_t fltr;   /* Множество фильтруемых событий */
    pthread_t pt_dinorg;      /* Идентификатор потока управления, */
                              /* ведающего организацией обеда */
    /* Информация о событии */
    struct posix_trace_event_info evinf;
    size_t datsz;                     /* Размер данных в событии */
    /* Буфер для имени события */
    char evnam[TRACE_EVENT_NAME_MAX];
    int evdat[BUFSIZ];                /* Данные "вилочных" событий */
    int res;                          /* Целочисленные результаты */
    trace_id_t logid = 0;             /* Addition: a stream with a log */
    int logfd = -1;
    sigset_t sigs;

    /* Addition: the command line. An option is never taken for the log's
       name, which the program creates and empties. */
    if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        printf("usage: philosophers [LOG]\n\n"
               "Listing 8.22: five philosophers ask a waiter for their forks with\n"
               "real-time signals for %d ms; prints the fork and signal events of the\n"
               "trace stream. With LOG, the events also go to that trace log (created,\n"
               "or emptied if it exists), for `rtrace dump LOG`.\n", DINNER_MS);
        return 0;
    }
    if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
        fprintf(stderr, "philosophers: %s \"%s\" (see philosophers --help)\n",
                argc > 2 ? "one LOG at most, not also" : "unknown option", argv[argc > 2 ? 2 : 1]);
        return 2;
    }

    /* Every thread inherits this mask: the signals are taken by sigwait. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGRTMIN);
    sigaddset(&sigs, SIGRTMIN + 1);
    (void)pthread_sigmask(SIG_BLOCK, &sigs, NULL);

    if ((errno = posix_trace_create(0, NULL, &trid)) != 0) {
        perror("POSIX_TRACE_CREATE");
        return (errno);
    }

    /* Установим фильтр на все системные события ... */
    (void)posix_trace_eventset_fill(&fltr, POSIX_TRACE_SYSTEM_EVENTS);
    /* ... и удалим из него события с сигналами */
    (void)posix_trace_eventset_del(traceSigGeneration, &fltr);
    (void)posix_trace_eventset_del(traceSigDelivery, &fltr);
    (void)posix_trace_eventset_del(traceSigCatchFunc, &fltr);
    if ((errno = posix_trace_set_filter(trid, &fltr, POSIX_TRACE_SET_EVENTSET)) != 0) {
        perror("POSIX_TRACE_SET_FILTER");
        return (errno);
    }

    /* Зарегистрируем три типа пользовательских событий */
    if (((errno = posix_trace_eventid_open("Заявка на вилки философа", &pev1)) != 0) ||
        ((errno = posix_trace_eventid_open("Захват вилок философа", &pev2)) != 0) ||
        ((errno = posix_trace_eventid_open("Освобождение вилок философа", &pev3)) != 0)) {
        perror("POSIX_TRACE_TRID_EVENTID_OPEN");
        return (errno);
    }

    /* Addition: the same events into a log, for rtrace. */
    if (argc > 1) {
        logfd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (logfd < 0 || (errno = posix_trace_create_withlog(0, NULL, logfd, &logid)) != 0 ||
            (errno = posix_trace_start(logid)) != 0) {
            perror(argv[1]);
            return 1;
        }
    }

    /* Активизируем трассировку */
    if ((errno = posix_trace_start(trid)) != 0) {
        perror("POSIX_TRACE_START");
        return (errno);
    }

    /* Организуем обед */
    if ((errno = pthread_create(&pt_dinorg, NULL, dinorg, NULL)) != 0) {
        perror("PTHREAD_CREATE-dinorg");
        return (errno);
    }

    /* Дождемся завершения обеда */
    (void)pthread_join(pt_dinorg, NULL);

    /* Остановим трассировку */
    if ((errno = posix_trace_stop(trid)) != 0) {
        perror("POSIX_TRACE_STOP");
        return (errno);
    }
    if (logfd >= 0) {
        if ((errno = posix_trace_shutdown(logid)) != 0) {
            perror("POSIX_TRACE_SHUTDOWN");
            return 1;
        }
        (void)close(logfd);
    }

    /* Прочитаем и распечатаем сгенерированные события */
    printf("Помещенные в поток трассировки события "
           "с вилками:\n");
    while (posix_trace_getnext_event(trid, &evinf, &evdat, sizeof(evdat), &datsz, &res),
           res == 0) {
        if (evinf.posix_event_id == traceSigGeneration) {
            printf("Потоком %p порожден сигнал с номером %d "
                   "и значением %d "
                   "для потока %p\n",
                   (void *)(long)evdat[0], evdat[2], evdat[3], (void *)(long)evdat[5]);
        } else if (evinf.posix_event_id == traceSigDelivery) {
            printf("Потоку %p доставлен сигнал с номером %d "
                   "и значением %d\n",
                   (void *)(long)evdat[0], evdat[1], evdat[2]);
        } else if (evinf.posix_event_id == traceSigCatchFunc) {
            printf("В контексте потока %p вызван обработчик "
                   "сигнала с номером %d "
                   "и значением %d\n",
                   (void *)(long)evdat[0], evdat[1], evdat[2]);
        } else if (posix_trace_eventid_get_name(trid, evinf.posix_event_id, evnam) == 0) {
            printf(" %s %d\n", evnam, evdat[0]);
        }
    }

    return 0;
}
